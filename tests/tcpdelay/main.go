// Command tcpdelay is a TCP proxy on 127.0.0.1 that delays every byte by a fixed one-way time in
// each direction, so a round trip through it costs 2 × delay more than a direct one. The lookup
// benchmark puts it between the JVM and PostgreSQL to model a database one network hop away
// (docs/benchmarks.md). Bytes keep their order; each chunk read is written once its delay has
// passed, so a stream of requests is delayed, not serialized.
//
//	go run ./tests/tcpdelay -listen 127.0.0.1:0 -target 127.0.0.1:5432 -delay 500us
//
// It prints the address it listens on as its first line of stdout and runs until killed.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	target := flag.String("target", "", "address to forward to (host:port)")
	delay := flag.Duration("delay", 500*time.Microsecond, "one-way delay added in each direction")
	flag.Parse()
	if *target == "" {
		log.Fatal("tcpdelay: -target is required")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("tcpdelay: %v", err)
	}
	fmt.Println(ln.Addr().String())
	os.Stdout.Sync()
	log.Fatal(serve(ln, *target, *delay))
}

// serve accepts connections until ln fails and proxies each to target with the delay.
func serve(ln net.Listener, target string, delay time.Duration) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go proxy(c, target, delay)
	}
}

func proxy(client net.Conn, target string, delay time.Duration) {
	server, err := net.Dial("tcp", target)
	if err != nil {
		client.Close()
		return
	}
	for _, c := range []net.Conn{client, server} {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
	}
	go pipe(server, client, delay)
	pipe(client, server, delay)
}

// chunk is bytes read at one moment, due for writing at due.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, each chunk delay after it was read, and closes both ends when src ends
// or dst fails.
func pipe(dst, src net.Conn, delay time.Duration) {
	queue := make(chan chunk, 4096)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 {
				queue <- chunk{buf[:n], time.Now().Add(delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		if d := time.Until(c.due); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	for range queue { // let the reader finish
	}
}
