//go:build unix

package db

import (
	"errors"
	"net"
	"syscall"
)

// peerEnded reports whether c's peer has ended the connection or sent
// bytes nobody asked for: a peek at the socket (MSG_PEEK, MSG_DONTWAIT)
// that neither consumes nor waits. A socket it cannot look at counts as
// live.
func peerEnded(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ended := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, e := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case errors.Is(e, syscall.EAGAIN) || errors.Is(e, syscall.EWOULDBLOCK) || errors.Is(e, syscall.EINTR):
			ended = false
		default: // bytes, the end of the stream (0, no error), or a socket error
			ended = true
		}
		return true // never wait
	})
	return err != nil || ended
}
