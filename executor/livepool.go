package executor

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/cgroups"
	"github.com/airlock-sandbox/airlock/nsjail"
	"github.com/airlock-sandbox/airlock/policy"
)

// livePool keeps live sandboxes prepared for one policy (PoolConfig.Live):
// each built to its pid 1 waiting for a process, in a cgroup of its own.
// What a NewSandbox then adds is its own part: the directory fds, its
// files, its timers (measured in BenchmarkLiveCreate).
type livePool struct {
	e     *Executor
	spec  nsjail.Spec // what each is prepared as (its program part unused)
	ready chan *preparedLive
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	want  chan struct{} // one token per sandbox to prepare
}

type preparedLive struct {
	live *nsjail.Live
	g    cgroups.Group
}

func newLivePool(e *Executor, cfg PoolConfig) (*livePool, error) {
	p := cfg.Policy
	if p.Workspace != "" {
		return nil, policy.Invalid("pool.policy.workspace", "a live sandbox's workspace is its own tmpfs")
	}
	enf, err := e.check(&p)
	if err != nil {
		return nil, err
	}
	spec, err := e.resolve(Request{Args: []string{"true"}, Policy: p}, enf)
	if err != nil {
		return nil, err
	}
	lp := &livePool{e: e, spec: spec, ready: make(chan *preparedLive, cfg.Live), want: make(chan struct{}, cfg.Live)}
	lp.ctx, lp.stop = context.WithCancel(context.Background())
	for range cfg.Live {
		lp.want <- struct{}{}
	}
	lp.wg.Add(1)
	go lp.refill()
	return lp, nil
}

// refill prepares a sandbox for each token, one at a time; a failure
// waits a little before the next try (the host may be short of memory).
func (lp *livePool) refill() {
	defer lp.wg.Done()
	for {
		select {
		case <-lp.ctx.Done():
			return
		case <-lp.want:
		}
		pl, err := lp.prepare()
		if err != nil {
			lp.e.cfg.Logger.Warn("live pool: preparing a sandbox failed", "error", err)
			lp.want <- struct{}{}
			select {
			case <-lp.ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		lp.ready <- pl
	}
}

func (lp *livePool) prepare() (*preparedLive, error) {
	spec := lp.spec
	var g cgroups.Group
	if spec.CgroupLimits != nil {
		var err error
		if g, err = lp.e.groups.take(*spec.CgroupLimits); err != nil {
			return nil, &policy.SetupError{Stage: "cgroup", Err: err}
		}
		if err := cgroups.KillOneOnOOM(g); err != nil {
			lp.e.groups.release(g)
			return nil, &policy.SetupError{Stage: "cgroup", Err: err}
		}
		spec.Cgroup = g
	}
	live, err := nsjail.PrepareLive(lp.ctx, spec)
	if err != nil {
		if g != nil {
			lp.e.groups.release(g)
		}
		return nil, err
	}
	return &preparedLive{live: live, g: g}, nil
}

// take returns a prepared sandbox for spec, or nil: none ready, or spec
// builds another jail or filter. Its token goes back for a new one.
func (lp *livePool) take(spec *nsjail.Spec) *preparedLive {
	if lp == nil || !nsjail.SameJail(&lp.spec, spec) || !nsjail.SameFilter(lp.spec.Seccomp, spec.Seccomp) || !reflect.DeepEqual(lp.spec.CgroupLimits, spec.CgroupLimits) {
		return nil
	}
	for {
		select {
		case pl := <-lp.ready:
			lp.want <- struct{}{}
			select {
			case <-pl.live.Done(): // died while it waited
				pl.close(lp.e)
				continue
			default:
				return pl
			}
		default:
			return nil
		}
	}
}

// LiveReady is how many prepared live sandboxes wait (PoolConfig.Live).
func (e *Executor) LiveReady() int {
	if e.live == nil {
		return 0
	}
	return len(e.live.ready)
}

func (pl *preparedLive) close(e *Executor) {
	pl.live.Close()
	if pl.g != nil {
		e.groups.release(pl.g)
	}
}

func (lp *livePool) close() {
	lp.stop()
	lp.wg.Wait()
	for {
		select {
		case pl := <-lp.ready:
			pl.close(lp.e)
		default:
			return
		}
	}
}
