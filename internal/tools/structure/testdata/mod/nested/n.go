// Package n is another module: issue 97 is not counted.
package n
