// Package conform maps a feed's properties to the columns of a common layer
// (addresses, parcels, buildings, centerlines) with OpenAddresses' conform
// vocabulary and batch-machine's semantics: a column maps to a field name,
// to a list of field names joined with a space, or to a function object
// (regexp, join, format, prefixed_number, postfixed_street, postfixed_unit,
// remove_prefix, remove_postfix, first_non_empty, chain, constant, map,
// mph_to_kph).
//
// batch-machine's openaddr/conform.py is the reference, down to its
// quirks: values are what its CSV extract makes of them (a null is "", an
// integer prints without ".0"), names match exactly, case included, a
// join with a missing field maps nothing while a regexp with one fails, a
// chain's variable is tested with Python's lstrip('oa:'). Patterns are
// Python's re dialect, run by regexp2 after a small translation (see
// compilePy); docs/decisions/0150-python-regexp-dialect.md says why.
//
// A Spec is parsed from YAML or JSON, Compile checks it, and Apply maps one
// feature's properties. Bind fixes the property names in advance so that
// Bound.Apply finds fields by index. RunTests runs OpenAddresses-style
// acceptance tests against a conform.
package conform
