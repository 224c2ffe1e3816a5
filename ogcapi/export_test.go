package ogcapi

import "github.com/ingestd/ingestd/source"

// IsException exposes isException to the tests.
var IsException = isException

// CheckContentCRS runs checkContentCRS for crs ("" means CRS84).
func CheckContentCRS(header, crs string) error {
	w, err := layerCRS(source.Layer{Settings: Settings{CRS: crs}})
	if err != nil {
		return err
	}
	return checkContentCRS(header, w, "http://test/items")
}
