package conform

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompileWholeCatalog compiles every conform of every layer of an
// OpenAddresses checkout named by INGESTD_OA_CATALOG (the catalog is 2,800
// files; testdata holds only what batch-machine computed from it):
//
//	INGESTD_OA_CATALOG=/path/to/openaddresses go test ./conform -run TestCompileWholeCatalog -v
func TestCompileWholeCatalog(t *testing.T) {
	root := os.Getenv("INGESTD_OA_CATALOG")
	if root == "" {
		t.Skip("set INGESTD_OA_CATALOG to a checkout of openaddresses/openaddresses")
	}
	n := 0
	err := filepath.WalkDir(filepath.Join(root, "sources"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var src struct {
			Layers map[string][]struct {
				Name    string          `json:"name"`
				Conform json.RawMessage `json:"conform"`
			} `json:"layers"`
		}
		if err := json.Unmarshal(data, &src); err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		for layer, items := range src.Layers {
			if _, ok := layers[layer]; !ok {
				continue
			}
			for _, it := range items {
				if len(it.Conform) == 0 {
					continue
				}
				n++
				spec, err := ParseOpenAddresses(it.Conform, layer)
				if err == nil {
					_, err = Compile(spec)
				}
				if err != nil {
					t.Errorf("%s %s/%s: %v", strings.TrimPrefix(path, root), layer, it.Name, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d conforms compiled", n)
}
