// Package connlimit caps how many connections a listener has open at
// once, as golang.org/x/net/netutil.LimitListener does, but its
// connections keep the zero-copy path of the connection they wrap: their
// ReadFrom is the wrapped connection's (sendfile or splice on TCP), where
// netutil's wrapper hides it and makes net/http copy every file it sends
// through user space.
package connlimit

import (
	"io"
	"net"
	"sync"
)

// Listen returns a listener that accepts from l while fewer than n of
// its connections are open; further connections wait in l's backlog.
func Listen(l net.Listener, n int) net.Listener {
	return &listener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

// listener is a net.Listener with a semaphore of open connections.
type listener struct {
	net.Listener
	sem       chan struct{}
	closeOnce sync.Once
	done      chan struct{} // closed by Close
}

// Accept waits for a free place, then accepts. Once the listener is
// closed it returns the wrapped listener's error.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		// Closed: the wrapped Accept fails at once; a connection it still
		// returns is dropped.
		for {
			c, err := l.Listener.Accept()
			if err != nil {
				return nil, err
			}
			_ = c.Close()
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &conn{Conn: c, release: func() { <-l.sem }}, nil
}

// Close closes the wrapped listener and wakes the waiting Accepts.
func (l *listener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// conn gives its place back when closed, once.
type conn struct {
	net.Conn
	releaseOnce sync.Once
	release     func()
}

// Close closes the connection and frees its place.
func (c *conn) Close() error {
	err := c.Conn.Close()
	c.releaseOnce.Do(c.release)
	return err
}

// ReadFrom is the wrapped connection's ReadFrom when it has one (a
// *net.TCPConn sends a file with sendfile), else a plain copy.
func (c *conn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{c.Conn}, r)
}

// writerOnly hides every method of a writer but Write.
type writerOnly struct{ io.Writer }
