package c

// The test of issue 14's finding.
func helper() {}
