package conform

import "slices"

// Layers holds the columns of OpenAddresses' four common layers, in
// batch-machine's order (openaddr/conform.py, ADDRESSES_SCHEMA and its
// siblings) without its "hash" column: the hash is batch-machine's
// fingerprint of a row, not a value a conform maps.
var layers = map[string][]string{
	"addresses":   {"number", "street", "unit", "city", "district", "region", "postcode", "id", "accuracy"},
	"buildings":   {"height", "levels"},
	"parcels":     {"pid"},
	"centerlines": {"id", "name", "oneway", "speed", "classification", "surface", "addr_from_left", "addr_to_left", "addr_from_right", "addr_to_right", "zip_left", "zip_right"},
}

// LayerNames returns the common layers' names, sorted.
func LayerNames() []string {
	names := make([]string, 0, len(layers))
	for n := range layers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LayerColumns returns the columns of the common layer name in
// OpenAddresses' order, and false when there is no such layer.
func LayerColumns(name string) ([]string, bool) {
	cols, ok := layers[name]
	return slices.Clone(cols), ok
}
