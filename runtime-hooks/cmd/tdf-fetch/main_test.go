package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFetchAll(t *testing.T) {
	var mu sync.Mutex
	conns := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		time.Sleep(20 * time.Millisecond)
		w.Write(bytes.Repeat([]byte("x"), n))
	}))
	// one connection per fetch: each pays its handshake over the link
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.Start()
	defer srv.Close()

	var out bytes.Buffer
	if err := fetchAll(&out, newClient(10*time.Second), []string{srv.URL + "/5", srv.URL + "/70000"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || lines[2] != "done 2" {
		t.Fatalf("output %q", out.String())
	}
	prevEnd := 0.0
	for i, want := range []string{"5", "70000"} {
		f := strings.Fields(lines[i])
		if len(f) != 4 || f[0] != "200" || f[1] != want {
			t.Fatalf("line %d: %q", i, lines[i])
		}
		d, _ := strconv.ParseFloat(f[2], 64)
		end, _ := strconv.ParseFloat(f[3], 64)
		// the handler sleeps 20 ms: a completion time below it was not timed
		// around the request; the end times grow by at least the fetch's time
		if d < 20 || end < prevEnd+d-0.01 {
			t.Errorf("line %d: completion %.3f ms, end %.3f ms after %.3f", i, d, end, prevEnd)
		}
		prevEnd = end
	}
	mu.Lock()
	defer mu.Unlock()
	if conns != 2 {
		t.Errorf("%d connections for 2 fetches", conns)
	}
}

func TestFetchAllFails(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	var out bytes.Buffer
	err := fetchAll(&out, newClient(10*time.Second), []string{srv.URL + "/x"})
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") || out.Len() != 0 {
		t.Errorf("404: err %v, output %q", err, out.String())
	}
	if err := fetchAll(&out, newClient(time.Second), []string{"http://127.0.0.1:1/"}); err == nil {
		t.Error("a refused connection: no error")
	}
}
