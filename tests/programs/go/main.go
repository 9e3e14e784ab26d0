// SPDX-License-Identifier: GPL-2.0

// A static Go program (CGO_ENABLED=0: the Go runtime's own vDSO calls,
// futex, nanosleep and epoll timeouts) in a dilated time namespace:
// time.Sleep, a time.Ticker, a time.Timer and time.Now, each measured on
// the program's own clock (the monotonic reading of time.Now) and bracketed
// by MARK lines for tdfrun's host-time check (protocol:
// tests/programs/tdfprog.h).
package main

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

const d = 200 * time.Millisecond

var nchecks, nfailed int

func check(ok bool, name, format string, a ...any) {
	nchecks++
	s := "ok"
	if !ok {
		nfailed++
		s = "fail"
	}
	fmt.Printf("CHECK %s %s: %s\n", s, name, fmt.Sprintf(format, a...))
}

func checkSleep(name string, got, want time.Duration) {
	check(got >= want && got < 2*want, name, "time.Since elapsed %.3f ms for %.3f ms (in [%d, %d) ms)",
		float64(got)/1e6, float64(want)/1e6, want.Milliseconds(), 2*want.Milliseconds())
}

var stdin = bufio.NewReader(os.Stdin)

func mark(what, name string, ns time.Duration) {
	if what == "begin" {
		fmt.Printf("MARK begin %s %d\n", name, ns.Nanoseconds())
		if os.Getenv("TDFRUN_ACK") == "1" {
			stdin.ReadString('\n') // tdfrun stamped the begin: start
		}
	} else {
		fmt.Printf("MARK end %s\n", name)
	}
}

func main() {
	mark("begin", "time.Sleep", d)
	t0 := time.Now()
	time.Sleep(d)
	el := time.Since(t0)
	wall := time.Now().Round(0).Sub(t0.Round(0)) // wall clock (CLOCK_REALTIME) reading
	mark("end", "time.Sleep", 0)
	checkSleep("go time.Sleep 200ms", el, d)
	diff := wall - el
	if diff < 0 {
		diff = -diff
	}
	check(diff < 5*time.Millisecond, "go wall clock agrees with the monotonic clock",
		"wall %.3f ms, monotonic %.3f ms", float64(wall)/1e6, float64(el)/1e6)

	const period = 50 * time.Millisecond
	mark("begin", "time.Ticker", 4*period)
	t0 = time.Now()
	tk := time.NewTicker(period)
	for i := 0; i < 4; i++ {
		<-tk.C
	}
	el = time.Since(t0)
	tk.Stop()
	mark("end", "time.Ticker", 0)
	checkSleep("go time.Ticker 50ms x4", el, 4*period)

	mark("begin", "time.Timer", d)
	t0 = time.Now()
	tm := time.NewTimer(d)
	<-tm.C
	el = time.Since(t0)
	mark("end", "time.Timer", 0)
	checkSleep("go time.Timer 200ms", el, d)

	fmt.Printf("DONE %d\n", nchecks)
	if nfailed > 0 {
		os.Exit(1)
	}
}
