package iggy

import (
	"errors"
	"fmt"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		is   []error
		isnt []error
	}{
		{&Error{Code: 1009}, []error{ErrStreamNotFound, ErrNotFound, bridge.ErrTopicNotFound}, []error{bridge.ErrUnavailable}},
		{&Error{Code: 2010, Committed: true}, []error{ErrTopicNotFound, bridge.ErrTopicNotFound}, []error{ErrStreamNotFound}},
		{&Error{Code: 3007}, []error{ErrPartitionNotFound, bridge.ErrPartitionNotFound}, []error{bridge.ErrTopicNotFound}},
		{&Error{Code: 2013}, []error{ErrTopicExists, ErrAlreadyExists, bridge.ErrTopicExists}, nil},
		{&Error{Code: 1012}, []error{ErrStreamExists}, []error{bridge.ErrTopicExists}},
		{&Error{Code: 57}, []error{ErrTransient, bridge.ErrUnavailable}, nil},
		{&Error{Code: 58}, []error{ErrTransient, bridge.ErrUnavailable}, nil},
		{&Error{Code: 40}, []error{ErrUnauthenticated, bridge.ErrUnavailable}, nil},
		{&Error{Code: 41}, []error{ErrUnauthorized, bridge.ErrNotPermitted}, []error{bridge.ErrUnavailable}},
		{&Error{Code: 4100}, []error{ErrInvalidOffset}, []error{bridge.ErrUnavailable}},
		{&Error{Code: 99999}, nil, []error{ErrNotFound, bridge.ErrUnavailable}},
		{&EvictionError{Reason: 9}, []error{ErrInvalidCredentials, bridge.ErrUnavailable}, nil},
		{&EvictionError{Reason: 13}, []error{ErrStaleClient, bridge.ErrUnavailable}, nil},
		{&EvictionError{Reason: 1}, []error{ErrUnauthenticated}, nil},
		{&ConnError{Addr: "a", Op: "request", Err: errors.New("eof")}, []error{bridge.ErrUnavailable}, nil},
		{fmt.Errorf("wrapped: %w", &ConnError{Err: &EvictionError{Reason: 14}}), []error{ErrIncompatibleProtocol, bridge.ErrUnavailable}, nil},
	}
	for _, tc := range cases {
		for _, target := range tc.is {
			if !errors.Is(tc.err, target) {
				t.Errorf("%v: must match %v", tc.err, target)
			}
		}
		for _, target := range tc.isnt {
			if errors.Is(tc.err, target) {
				t.Errorf("%v: must not match %v", tc.err, target)
			}
		}
	}
	if s := (&EvictionError{Reason: 14, ServerVersion: 0x3000, MinVersion: 0x3000}).Error(); s != "iggy: evicted (reason 14, incompatible protocol): client speaks 0.11.0, server accepts 0.12.0..0.12.0" {
		t.Errorf("message: %s", s)
	}
}

func TestSessionLost(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]bool{
		&Error{Code: 40}:                      true,
		&Error{Code: 30}:                      true,
		errUnexpectedEmptySendBody:            true,
		&Error{Code: 2010}:                    false,
		nil:                                   false,
		fmt.Errorf("x: %w", &Error{Code: 40}): true,
	} {
		if got := sessionLost(err); got != want {
			t.Errorf("sessionLost(%v) = %v", err, got)
		}
	}
}

func TestPartitionState(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    Partition
		want bridge.PartitionState
	}{
		{Partition{}, bridge.PartitionState{}},
		{Partition{CurrentOffset: 0, MessagesCount: 1}, bridge.PartitionState{Next: 1}},
		{Partition{CurrentOffset: 9, MessagesCount: 10}, bridge.PartitionState{Next: 10}},
		{Partition{CurrentOffset: 9, MessagesCount: 4}, bridge.PartitionState{Earliest: 6, Next: 10}},
		{Partition{CurrentOffset: 9, MessagesCount: 0}, bridge.PartitionState{Earliest: 10, Next: 10}},
	} {
		if got := tc.p.State(); got != tc.want {
			t.Errorf("%+v: got %+v, want %+v", tc.p, got, tc.want)
		}
	}
}
