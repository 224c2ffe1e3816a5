package c

import (
	"errors"
	"fmt"
)

var (
	// ErrX is declared here and in b.
	ErrX = errors.New("x")
	// ErrWrapped is no sentinel of errors.New.
	ErrWrapped = fmt.Errorf("w: %w", ErrX)
)

// C returns ErrX.
func C() error { return ErrX }
