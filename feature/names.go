package feature

import "strconv"

// UniqueNames returns names with every repeat renamed as GDAL renames a
// field whose name a layer already has when it writes the layer (ogr2ogr
// to GeoJSON, PostgreSQL or a Shapefile): the first keeps its name, a
// later one becomes the name followed by the smallest number from 2 that
// no earlier field has (NAME, NAME → NAME, NAME2; NAME, NAME2, NAME →
// NAME, NAME2, NAME3). Names differing in case only are not repeats, as
// for GDAL. A file with two columns of one name (a DBF or a CSV header)
// would otherwise store one value under that name, the other lost.
// names is not modified; when nothing repeats it is returned as is.
func UniqueNames(names []string) []string {
	seen := make(map[string]bool, len(names))
	var out []string
	for i, n := range names {
		if !seen[n] {
			seen[n] = true
			if out != nil {
				out = append(out, n)
			}
			continue
		}
		if out == nil {
			out = append(make([]string, 0, len(names)), names[:i]...)
		}
		k := 2
		for seen[n+strconv.Itoa(k)] {
			k++
		}
		n += strconv.Itoa(k)
		seen[n] = true
		out = append(out, n)
	}
	if out == nil {
		return names
	}
	return out
}
