// Package t is a tool: issue 98 is not counted.
package t
