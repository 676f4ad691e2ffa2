package group

import "time"

// Clock is the time source of the consumer protocol's timers (session and
// rebalance timeouts of KIP-848 members), so tests can move time by hand
// instead of sleeping. The classic protocol keeps its own time.AfterFunc
// timers.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f on its own goroutine after d, unless stopped.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop keeps the function from running; false if it already ran or
	// was stopped.
	Stop() bool
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
