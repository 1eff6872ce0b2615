package main

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// TestDelaysEachRoundTrip echoes lines through the proxy and checks that every round trip takes
// at least twice the one-way delay and that the bytes arrive unchanged and in order.
func TestDelaysEachRoundTrip(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadBytes('\n')
					if err != nil {
						c.Close()
						return
					}
					c.Write(line)
				}
			}()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const delay = 20 * time.Millisecond
	go serve(ln, echo.Addr().String(), delay)

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for i, msg := range []string{"one\n", "two\n", "three\n"} {
		start := time.Now()
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		got, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if got != msg {
			t.Fatalf("round trip %d: got %q, want %q", i, got, msg)
		}
		if rtt := time.Since(start); rtt < 2*delay {
			t.Fatalf("round trip %d took %v, want at least %v", i, rtt, 2*delay)
		}
	}
}
