package ogcapi

import "github.com/ingestd/ingestd/source"

// IsException runs errorDocument on a body of Content-Type
// application/json.
func IsException(p []byte) bool { return errorDocument(p, "application/json") }

// CheckContentCRS runs checkContentCRS for crs ("" means CRS84).
func CheckContentCRS(header, crs string) error {
	w, err := layerCRS(source.Layer{Settings: Settings{CRS: crs}})
	if err != nil {
		return err
	}
	return checkContentCRS(header, w, "http://test/items")
}
