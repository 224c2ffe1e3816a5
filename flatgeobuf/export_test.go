package flatgeobuf

// Offset is where the next feature starts in the file.
func (r *Reader) Offset() int64 { return r.offset }
