// Command tdf-fetch is the load generator of tests/vm/cri-diecast.t (what
// curl -w %{time_total} is in fidelity/experiments/diecast.py, which the
// busybox images of the CRI tests cannot hold): it fetches each URL in turn,
// one connection per fetch, and prints a line per fetch
//
//	STATUS BYTES MS END_MS
//
// MS the fetch's completion time (request sent to body read) and END_MS the
// time since the first fetch began, both in ms as the process perceives them
// (the monotonic clock, dilated in a time namespace with a TDF), then "done
// N". Static (CGO off), so that it runs in an image of busybox alone.
//
//	tdf-fetch [-t SECS] URL...   -t: the limit of one fetch (default 120)
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	args, limit := os.Args[1:], 120*time.Second
	if len(args) >= 2 && args[0] == "-t" {
		s, err := strconv.ParseFloat(args[1], 64)
		if err != nil || s <= 0 {
			fatal(fmt.Errorf("-t %q: want seconds > 0", args[1]))
		}
		limit, args = time.Duration(s*float64(time.Second)), args[2:]
	}
	if len(args) == 0 {
		fatal(fmt.Errorf("usage: tdf-fetch [-t SECS] URL..."))
	}
	fatal(fetchAll(os.Stdout, newClient(limit), args))
}

// newClient: a new connection per fetch (as the "Connection: close" of
// diecast.py's curl: every fetch pays its handshake over the link) and no
// proxy from the environment
func newClient(limit time.Duration) *http.Client {
	return &http.Client{Timeout: limit, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
}

// fetchAll fetches the urls in turn and writes a line per fetch to w as it
// completes (a watcher outside times the lines against its own clock), and
// stops at the first error or status other than 200.
func fetchAll(w io.Writer, c *http.Client, urls []string) error {
	start := time.Now()
	for _, u := range urls {
		t0 := time.Now()
		resp, err := c.Get(u)
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		t1 := time.Now()
		if err != nil {
			return fmt.Errorf("%s: %v", u, err)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
		}
		if _, err := fmt.Fprintf(w, "%d %d %.3f %.3f\n", resp.StatusCode, n, ms(t1.Sub(t0)), ms(t1.Sub(start))); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "done %d\n", len(urls))
	return err
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fatal(err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "tdf-fetch: %v\n", err)
		os.Exit(1)
	}
}
