// SPDX-License-Identifier: GPL-2.0
//
// Java in a dilated time namespace: Thread.sleep, Object.wait(timeout) and
// LockSupport.parkNanos, each measured on System.nanoTime (and
// System.currentTimeMillis, which must agree) and bracketed by MARK lines for
// tdfrun's host-time check (protocol: tests/programs/tdfprog.h).
import java.util.concurrent.locks.LockSupport;

public class SleepProg {
	static final long D = 200_000_000L;
	static int nchecks, nfailed;

	static void check(boolean ok, String name, String details) {
		nchecks++;
		if (!ok)
			nfailed++;
		System.out.println("CHECK " + (ok ? "ok" : "fail") + " " + name + ": " + details);
		System.out.flush();
	}

	static void checkSleep(String name, String clk, long got, long want) {
		check(got >= want && got < 2 * want, name, String.format("%s elapsed %.3f ms for %.3f ms (in [%d, %d) ms)",
		      clk, got / 1e6, want / 1e6, want / 1000000, 2 * want / 1000000));
	}

	static void mark(String what, String name, long ns) throws java.io.IOException {
		System.out.println("MARK " + what + " " + name + (what.equals("begin") ? " " + ns : ""));
		System.out.flush();
		if (what.equals("begin") && "1".equals(System.getenv("TDFRUN_ACK"))) {
			int c;	// tdfrun stamped the begin: start
			while ((c = System.in.read()) != -1 && c != '\n')
				;
		}
	}

	public static void main(String[] args) throws Exception {
		mark("begin", "Thread.sleep", D);
		long n0 = System.nanoTime(), w0 = System.currentTimeMillis();
		Thread.sleep(D / 1000000);
		long n1 = System.nanoTime(), w1 = System.currentTimeMillis();
		mark("end", "Thread.sleep", 0);
		checkSleep("java Thread.sleep 200ms", "System.nanoTime", n1 - n0, D);
		// currentTimeMillis has 1 ms granularity
		check(Math.abs((w1 - w0) * 1000000 - (n1 - n0)) < 5000000, "java currentTimeMillis agrees with nanoTime",
		      String.format("currentTimeMillis %d ms, nanoTime %.3f ms", w1 - w0, (n1 - n0) / 1e6));

		Object lock = new Object();
		mark("begin", "Object.wait", D);
		n0 = System.nanoTime();
		synchronized (lock) {
			// no notify: a spurious wake-up would end it early (and fail)
			lock.wait(D / 1000000);
		}
		n1 = System.nanoTime();
		mark("end", "Object.wait", 0);
		checkSleep("java Object.wait 200ms", "System.nanoTime", n1 - n0, D);

		mark("begin", "LockSupport.parkNanos", D);
		n0 = System.nanoTime();
		long left = D;
		while (left > 0) {	// park may return spuriously: park again for the rest
			LockSupport.parkNanos(left);
			left = D - (System.nanoTime() - n0);
		}
		n1 = System.nanoTime();
		mark("end", "LockSupport.parkNanos", 0);
		checkSleep("java LockSupport.parkNanos 200ms", "System.nanoTime", n1 - n0, D);

		System.out.println("DONE " + nchecks);
		System.out.flush();
		System.exit(nfailed > 0 ? 1 : 0);
	}
}
