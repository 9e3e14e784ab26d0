// SPDX-License-Identifier: GPL-2.0

// ftgoprobe: the "ftprobe rate" protocol of bench/faketime in a static Go
// binary (CGO_ENABLED=0: no libc, so the runtime reads the vDSO itself and
// an LD_PRELOADed library never sees the call).
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 || os.Args[1] != "rate" {
		fmt.Fprintln(os.Stderr, "usage: ftgoprobe rate")
		os.Exit(2)
	}
	t0 := time.Now()
	os.Stdout.WriteString("ready\n")
	buf := make([]byte, 64)
	if n, err := os.Stdin.Read(buf); n <= 0 || err != nil {
		os.Exit(1)
	}
	t1 := time.Now()
	// Sub uses the monotonic reading (CLOCK_MONOTONIC); UnixNano the wall
	// clock (CLOCK_REALTIME)
	fmt.Printf("mono %.6f real %.6f\n", t1.Sub(t0).Seconds(),
		float64(t1.UnixNano()-t0.UnixNano())/1e9)
}
