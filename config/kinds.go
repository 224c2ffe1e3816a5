package config

import (
	"slices"

	"github.com/ingestd/ingestd/internal/kinds"
)

// describesSchema reports whether feeds of kind read their layers'
// declared schema (typed layers).
func describesSchema(kind string) bool {
	k, _ := kinds.Lookup(kind)
	return k.DescribeSchema
}

// feedKeys are the keys a feed may have: the common ones and every kind's.
func feedKeys() []string {
	keys := slices.Clone(commonFeedKeys)
	for _, k := range kinds.All() {
		for _, key := range k.Keys {
			if !slices.Contains(keys, key) {
				keys = append(keys, key)
			}
		}
	}
	return keys
}

// jurisdictionAllKeys are the keys of a jurisdiction: the common ones and
// every kind's DefaultKeys.
func jurisdictionAllKeys() []string { return withKindDefaultKeys(jurisdictionKeys) }

// defaultsKeys are the keys of the defaults block: the common ones and
// every kind's DefaultKeys.
func defaultsKeys() []string { return withKindDefaultKeys(commonDefaultsKeys) }

// withKindDefaultKeys is common and every kind's DefaultKeys.
func withKindDefaultKeys(common []string) []string {
	keys := slices.Clone(common)
	for _, k := range kinds.All() {
		for _, key := range k.DefaultKeys {
			if !slices.Contains(keys, key) {
				keys = append(keys, key)
			}
		}
	}
	return keys
}
