package ogcapi

// IsException exposes isException to the tests.
var IsException = isException
