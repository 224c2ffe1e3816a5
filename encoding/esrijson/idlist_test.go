package esrijson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/feature"
)

func readIDList(doc string, max int) (string, []int64, error) {
	var ids []int64
	errTooMany := errors.New("too many")
	name, err := ReadObjectIDs(strings.NewReader(doc), func(id int64) error {
		if len(ids) == max {
			return errTooMany
		}
		ids = append(ids, id)
		return nil
	})
	return name, ids, err
}

func TestReadObjectIDs(t *testing.T) {
	cases := []struct {
		doc  string
		name string
		ids  []int64
	}{
		{`{"objectIdFieldName":"OBJECTID","objectIds":[3,1,2]}`, "OBJECTID", []int64{3, 1, 2}},
		{`{"objectIds":[ 7 , -1 ,9007199254740993],"objectIdFieldName":"FID","extra":{"a":[1,2]}}`, "FID", []int64{7, -1, 9007199254740993}},
		{`{"objectIdFieldName":"OBJECTID","objectIds":null}`, "OBJECTID", nil},
		{`{"objectIdFieldName":"OBJECTID"}`, "OBJECTID", nil},
		{"\n{\"objectIds\":[]}\n", "", nil},
	}
	for _, c := range cases {
		name, ids, err := readIDList(c.doc, 100)
		if err != nil || name != c.name || !slices.Equal(ids, c.ids) {
			t.Errorf("%s: %q %v %v, want %q %v", c.doc, name, ids, err, c.name, c.ids)
		}
	}
}

// An error object is the answer wherever it sits: first, after the field
// name, after the ids.
func TestReadObjectIDsErrorAnywhere(t *testing.T) {
	for _, doc := range []string{
		`{"error":{"code":500,"message":"Error performing query operation"}}`,
		`{"objectIdFieldName":"OBJECTID","error":{"code":500,"message":"Error performing query operation"}}`,
		`{"objectIdFieldName":"OBJECTID","objectIds":[1,2],"error":{"code":"500","message":"Error performing query operation","details":["timeout"]}}`,
	} {
		_, _, err := readIDList(doc, 100)
		var se *ServerError
		if !errors.As(err, &se) || se.Code != 500 || se.Message != "Error performing query operation" {
			t.Errorf("%s: %v, want the error object", doc, err)
		}
	}
}

func TestReadObjectIDsRefuses(t *testing.T) {
	big := `{"objectIdFieldName":"` + strings.Repeat("a", 3*MaxIDListValue) + `","objectIds":[1]}`
	digits := `{"objectIds":[1,` + strings.Repeat("9", 3*MaxIDListValue) + `]}`
	cases := []struct{ doc, want string }{
		{`[1,2,3]`, "'[' where '{' belongs"},
		{`{"objectIds":[1,2],}`, "'}' where a value belongs"},
		{`{"objectIds":[1 2]}`, "'2' after objectIds[0], want , or ]"},
		{`{"objectIds":[1,]}`, "objectIds[1] is not a number"},
		{`{"objectIdFieldName":OBJECTID}`, "objectIdFieldName"},
		{`{"extra":{"a":]},"objectIds":[1]}`, "extra: not JSON"},
		{`{"objectIds":[1,2.5]}`, "objectIds[1] is not an integer object id"},
		{`{"objectIds":[+1]}`, "objectIds[0] is not an integer object id"},
		{`{"objectIds":[01]}`, "objectIds[0] is not an integer object id"},
		{`{"objectIds":[1,"2"]}`, "objectIds[1] is not a number"},
		{`{"objectIds":{"a":1}}`, "objectIds is not an array"},
		{`{"objectIds":[1],"objectIds":[2]}`, `two "objectIds" members`},
		{`{"objectIds":[1,2`, "unexpected EOF"},
		{`{"objectIds":[1]} {}`, "data after the document"},
		{big, "a value longer than 1048576 bytes"},
		{digits, "objectIds[1] is longer than 32 characters"},
	}
	for _, c := range cases {
		_, _, err := readIDList(c.doc, 100)
		var de *feature.DecodeError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: %v, want a DecodeError with %q", c.doc, err, c.want)
		}
	}
	// add's error ends the read, as is.
	_, ids, err := readIDList(`{"objectIds":[1,2,3,4]}`, 2)
	if err == nil || err.Error() != "too many" || len(ids) != 2 {
		t.Errorf("add's error: %v after %v", err, ids)
	}
}

// The decoder holds no more than a value's bound, however long the list:
// an endless list of ids streams to add.
func TestReadObjectIDsStreams(t *testing.T) {
	const n = 300_000
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, `{"objectIdFieldName":"OBJECTID","objectIds":[0`)
		buf := make([]byte, 0, 64<<10)
		for i := 1; i < n; i++ {
			buf = append(buf, ',', '7')
			if len(buf) > 60<<10 {
				_, _ = pw.Write(buf)
				buf = buf[:0]
			}
		}
		_, _ = pw.Write(append(buf, "]}"...))
		_ = pw.Close()
	}()
	count := 0
	if _, err := ReadObjectIDs(pr, func(int64) error { count++; return nil }); err != nil || count != n {
		t.Fatalf("%d ids, %v", count, err)
	}
}

// FuzzReadObjectIDs: no input panics the id list's scanner, and what it
// accepts is JSON whose objectIds encoding/json reads as the same ids.
func FuzzReadObjectIDs(f *testing.F) {
	for _, seed := range []string{
		`{"objectIdFieldName":"OBJECTID","objectIds":[3,1,2]}`,
		`{"objectIds":null}`,
		`{"objectIdFieldName":"OBJECTID","error":{"code":500,"message":"x","details":["a\"b"]}}`,
		`{"extra":{"a":[1,{"b":"]}"}]},"objectIds":[ 1 , 2 ]}`,
		`{}`,
		`{"objectIds":[-9223372036854775808,9223372036854775807,-0,0]}`,
		`{"objectIds":[9223372036854775808]}`,
		"{\"objectIds\":[\n1,\t2\r\n,3 ]}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var got []int64
		_, err := ReadObjectIDs(strings.NewReader(doc), func(id int64) error { got = append(got, id); return nil })
		if err != nil {
			return
		}
		if !json.Valid([]byte(doc)) {
			t.Fatalf("accepted %q, which is not JSON", doc)
		}
		// What it accepts, encoding/json reads as the same ids.
		var members map[string]json.RawMessage
		var want []int64
		if err := json.Unmarshal([]byte(doc), &members); err != nil {
			t.Fatalf("accepted %q, which is not an object: %v", doc, err)
		}
		if raw, ok := members["objectIds"]; ok {
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatalf("accepted %q, whose objectIds encoding/json refuses: %v", doc, err)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%q: read %v, encoding/json reads %v", doc, got, want)
		}
	})
}

// BenchmarkReadObjectIDs reads an id list of 100,000 shuffled object ids,
// as a county parcel layer's returnIdsOnly answer arrives on every poll.
func BenchmarkReadObjectIDs(b *testing.B) {
	ids := make([]int64, 100_000)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	doc, err := json.Marshal(map[string]any{"objectIdFieldName": "OBJECTID", "objectIds": ids})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		n := 0
		if _, err := ReadObjectIDs(bytes.NewReader(doc), func(int64) error { n++; return nil }); err != nil || n != len(ids) {
			b.Fatalf("%d ids, %v", n, err)
		}
	}
}
