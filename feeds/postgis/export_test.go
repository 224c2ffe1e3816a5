package postgis

// SetSmallSnapshot sets the size up to which applies take the small
// snapshot paths; tests of the large paths set 0.
func SetSmallSnapshot(s *Store, features int64) { s.smallSnapshot = features }
