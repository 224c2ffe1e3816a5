package postgis

// SetSmallSnapshot sets the size up to which applies take the small
// snapshot paths; tests of the large paths set 0.
func SetSmallSnapshot(s *Store, features int64) { s.smallSnapshot = features }

// SetLargeUnchangedCheck turns the large snapshots' unchanged check on or
// off; tests of applySQL's own handling of an unchanged layer turn it off.
func SetLargeUnchangedCheck(s *Store, on bool) { s.largeUnchangedCheck = on }
