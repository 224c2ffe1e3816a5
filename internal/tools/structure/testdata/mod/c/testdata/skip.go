// Package skip is testdata: issue 99 is not counted.
package skip
