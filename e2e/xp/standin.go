package xp

import (
	"context"
	"maps"
	"sync"
	"time"
)

// A standIn plays a controller nothing runs in the harness (a Gateway
// implementation, KEDA): every 500 ms, for each namespace it is told to
// serve (Serve), it syncs that namespace in the mode given, until Stop. An
// error is logged once, not every round.
type standIn[M any] struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	modes map[string]M
}

// startStandIn starts a stand-in named name (for its log lines) that syncs
// a namespace with sync; it serves no namespace yet.
func startStandIn[M any](ctx context.Context, name string, logf func(string, ...any), sync func(context.Context, string, M) error) *standIn[M] {
	ctx, cancel := context.WithCancel(ctx)
	s := &standIn[M]{cancel: cancel, modes: map[string]M{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		last := map[string]string{}
		for {
			s.mu.Lock()
			modes := maps.Clone(s.modes)
			s.mu.Unlock()
			for ns, m := range modes {
				msg := ""
				if err := sync(ctx, ns, m); err != nil && ctx.Err() == nil {
					msg = err.Error()
				}
				if msg != "" && msg != last[ns] {
					logf("%s: %s: %s", name, ns, msg)
				}
				last[ns] = msg
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Serve makes the stand-in answer for namespace ns in mode m, from its next
// round on.
func (s *standIn[M]) Serve(ns string, m M) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modes[ns] = m
}

// Forget stops serving namespace ns (what it wrote stays).
func (s *standIn[M]) Forget(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.modes, ns)
}

// Stop ends the stand-in.
func (s *standIn[M]) Stop() {
	s.cancel()
	s.wg.Wait()
}

// orNop is logf, or a function that logs nothing.
func orNop(logf func(string, ...any)) func(string, ...any) {
	if logf == nil {
		return func(string, ...any) {}
	}
	return logf
}
