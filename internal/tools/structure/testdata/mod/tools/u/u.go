// Package u is a tool: issue 96 is not counted.
package u
