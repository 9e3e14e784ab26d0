package scaling

import (
	"fmt"
	"math/big"
)

// Bounds the kernel puts on cgroup v2 cpu.max (CFS bandwidth control).
const (
	MinQuotaUS  = 1000    // quota below 1ms is refused by the kernel
	MinPeriodUS = 1000    // period in [1ms, 1s]
	MaxPeriodUS = 1000000 //
	// DefaultPeriodUS is the cpu.max period chosen when none is given: 10ms.
	// DieCast (§3.3) shows that bursty CPU allocation distorts I/O timing more
	// as the TDF grows, so the share should be handed out in short periods.
	// 10ms is the shortest period that still gives a 10% share (TDF 10) the
	// kernel's minimum quota of 1ms; in dilated time it is 10ms/TDF (1ms at
	// TDF 10), finer than a perceived scheduler tick at HZ=250. Shorter
	// periods would raise the cost of the bandwidth timer and of
	// throttling/unthrottling for no gain in evenness that the perceived
	// machine could see. For smaller shares the period is lengthened to the
	// shortest one that gives a 1ms quota.
	DefaultPeriodUS = 10000
)

// CPU is the physical cgroup v2 cpu.max setting.
type CPU struct {
	QuotaUS   uint64
	PeriodUS  uint64
	Share     *big.Rat // real CPUs granted
	Perceived *big.Rat // CPUs the dilated namespace perceives (cpus*TDF/scale)
}

// Line is the content written to cpu.max: "QUOTA PERIOD".
func (c CPU) Line() string { return fmt.Sprintf("%d %d", c.QuotaUS, c.PeriodUS) }

// ScaleCPU computes cpu.max for a namespace that should perceive cpus CPUs
// (may be fractional), with resource scale factor scale (normally the TDF),
// on a machine with online CPUs. periodUS 0 chooses the period (see
// DefaultPeriodUS).
func ScaleCPU(cpus *big.Rat, tdf, scale Factor, online int, periodUS uint64) (CPU, []string, error) {
	var warn []string
	if cpus == nil || cpus.Sign() <= 0 {
		return CPU{}, nil, fmt.Errorf("perceived CPUs must be positive")
	}
	if online <= 0 {
		return CPU{}, nil, fmt.Errorf("number of online CPUs unknown")
	}
	share := new(big.Rat).Quo(cpus, scale.Rat())
	if share.Cmp(big.NewRat(int64(online), 1)) > 0 {
		return CPU{}, nil, fmt.Errorf("%s perceived CPUs at scale %s need %s real CPUs, above the %d of this machine",
			cpus.FloatString(3), scale, share.FloatString(3), online)
	}
	if periodUS == 0 {
		periodUS = DefaultPeriodUS
		q := new(big.Rat).Mul(share, big.NewRat(int64(periodUS), 1))
		if q.Cmp(big.NewRat(MinQuotaUS, 1)) < 0 {
			// shortest period giving a quota of at least 1ms
			p := new(big.Rat).Quo(big.NewRat(MinQuotaUS, 1), share)
			pi := new(big.Int).Quo(p.Num(), p.Denom())
			if !p.IsInt() {
				pi.Add(pi, big.NewInt(1))
			}
			if pi.Cmp(big.NewInt(MaxPeriodUS)) > 0 {
				return CPU{}, nil, fmt.Errorf("a share of %s real CPUs is below what cpu.max can express (1ms quota per 1s period = 0.001 CPU)",
					share.FloatString(6))
			}
			periodUS = pi.Uint64()
			warn = append(warn, fmt.Sprintf("cpu.max period raised to %dus so that the quota reaches the kernel minimum of 1ms", periodUS))
		}
	} else if periodUS < MinPeriodUS || periodUS > MaxPeriodUS {
		return CPU{}, nil, fmt.Errorf("cpu period %dus outside the kernel's range [1ms, 1s]", periodUS)
	}
	exact := new(big.Rat).Mul(share, big.NewRat(int64(periodUS), 1))
	quota := roundRat(exact)
	if quota.Cmp(big.NewInt(MinQuotaUS)) < 0 {
		return CPU{}, nil, fmt.Errorf("cpu quota %sus per %dus period is below the kernel minimum of 1ms; use a longer period",
			exact.FloatString(1), periodUS)
	}
	if relErr(exact, quota) > 0.01 {
		return CPU{}, nil, fmt.Errorf("cpu share %s cannot be represented to 1%% with a %dus period", share.FloatString(6), periodUS)
	}
	perceived := new(big.Rat).Mul(share, tdf.Rat())
	if !tdf.Equal(scale) {
		warn = append(warn, fmt.Sprintf("scale %s differs from TDF %s: the namespace perceives %s CPUs of this machine's speed",
			scale, tdf, perceived.FloatString(3)))
	}
	return CPU{QuotaUS: quota.Uint64(), PeriodUS: periodUS, Share: share, Perceived: perceived}, warn, nil
}
