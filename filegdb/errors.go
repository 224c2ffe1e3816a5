package filegdb

import "fmt"

// Error is a File Geodatabase the reader cannot read: a table's structure
// (Row 0) or one row of it is malformed, cut short or claims more than it
// holds. Table names the layer and its file; Row is the row's OBJECTID.
type Error struct {
	Table string
	Row   int64
	Msg   string
	Err   error
}

func (e *Error) Error() string {
	where := "filegdb: "
	if e.Table != "" {
		where += e.Table + ": "
	}
	if e.Row > 0 {
		where += fmt.Sprintf("row %d: ", e.Row)
	}
	if e.Err != nil && e.Msg != "" {
		return where + e.Msg + ": " + e.Err.Error()
	}
	if e.Err != nil {
		return where + e.Err.Error()
	}
	return where + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }
