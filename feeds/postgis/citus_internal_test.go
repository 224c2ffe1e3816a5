package postgis

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestNodeLost: the coordinator's error for an unreachable worker (as Citus
// 13.2 words it, scripts/citus.sh with a worker stopped) becomes a
// *NodeLostError naming the node, still unwrapping to the server's error;
// other errors, a local connection failure among them, stay as they are.
func TestNodeLost(t *testing.T) {
	lost := &pgconn.PgError{Code: "08006", Message: "connection to the remote node postgres@127.0.0.1:55641 failed with the following error: Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?"}
	err := nodeLost(fmt.Errorf("step: %w", lost))
	var nl *NodeLostError
	if !errors.As(err, &nl) || nl.Node != "127.0.0.1:55641" {
		t.Fatalf("nodeLost = %v (%#v), want a NodeLostError naming 127.0.0.1:55641", err, nl)
	}
	if want := "database node 127.0.0.1:55641 holding the feed's layer (a Citus worker) cannot be reached: nothing was applied; the next poll applies the change once it is back"; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr != lost {
		t.Errorf("does not unwrap to the server's error")
	}
	for _, other := range []error{
		errors.New("plain"),
		&pgconn.PgError{Code: "08006", Message: "connection failure"},
		&pgconn.PgError{Code: "0A000", Message: "direct joins between distributed and local tables are not supported"},
	} {
		if got := nodeLost(other); got != other {
			t.Errorf("nodeLost(%v) = %v, want it unchanged", other, got)
		}
	}
}
