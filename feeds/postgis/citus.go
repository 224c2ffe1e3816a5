package postgis

import (
	"errors"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// NodeLostError is an apply that failed because the database node holding
// the feed's layer could not be reached: on Citus, the worker its
// jurisdiction's schema is placed on. Nothing was applied; the next poll
// applies the change once the node is back. It unwraps to the server's
// error.
type NodeLostError struct {
	// Node is the node's host:port as the coordinator names it ("" when
	// its message names none).
	Node string
	err  error
}

// Error says what happened in ingestd's words, without the coordinator's
// connection message.
func (e *NodeLostError) Error() string {
	node := "a database node"
	if e.Node != "" {
		node = "database node " + e.Node
	}
	return node + " holding the feed's layer (a Citus worker) cannot be reached: nothing was applied; the next poll applies the change once it is back"
}

// Unwrap returns the server's error.
func (e *NodeLostError) Unwrap() error { return e.err }

// remoteNode finds the node in Citus's "connection to the remote node
// user@host:port failed …".
var remoteNode = regexp.MustCompile(`remote node (?:[^@\s]+@)?(\S+) failed`)

// nodeLost turns Citus's failure to reach a worker (a connection
// exception, SQLSTATE class 08, raised by the coordinator about a remote
// node) into a *NodeLostError; any other error is returned as it is.
func nodeLost(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || !strings.HasPrefix(pgErr.Code, "08") || !strings.Contains(pgErr.Message, "remote node") {
		return err
	}
	e := &NodeLostError{err: err}
	if m := remoteNode.FindStringSubmatch(pgErr.Message); m != nil {
		e.Node = m[1]
	}
	return e
}
