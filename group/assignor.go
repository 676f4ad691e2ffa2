package group

// The server-side assignors of the consumer protocol (KIP-848), the two
// Kafka ships: uniform (the default) and range. An assignor maps the
// group's members and their subscriptions onto the partitions of the
// topics they subscribe to; the coordinator then moves each member towards
// its share (reconcile, consumer.go). Pure functions of their input: no
// lock, no clock, any goroutine.

import (
	"cmp"
	"slices"
)

const (
	assignorUniform = "uniform"
	assignorRange   = "range"
)

// tp is one partition, by topic id.
type tp struct {
	topic [16]byte
	part  int32
}

func cmpTP(a, b tp) int {
	if c := cmp.Compare(string(a.topic[:]), string(b.topic[:])); c != 0 {
		return c
	}
	return cmp.Compare(a.part, b.part)
}

// partSet is a set of partitions.
type partSet = set[tp]

// assignTopic is one subscribed topic as the assignor sees it.
type assignTopic struct {
	id         [16]byte
	name       string
	partitions int32
}

// assignMember is one member as the assignor sees it: the topics it
// subscribes to that exist, and its previous target (for stickiness).
type assignMember struct {
	id      string
	topics  map[[16]byte]bool
	current partSet
}

// assignInput is what an assignor works on: members sorted by id, topics
// sorted by name.
type assignInput struct {
	members []assignMember
	topics  []assignTopic
}

type assignFunc func(in assignInput) map[string]partSet

var assignors = map[string]assignFunc{
	assignorUniform: assignUniform,
	assignorRange:   assignRange,
}

// assignUniform spreads the partitions so that the members subscribed to
// the same topics hold within one partition of each other, moving as few
// partitions as it can from the previous target (sticky): every member
// keeps what it had while that stays within balance, new and freed
// partitions go to the least loaded eligible member, then partitions move
// one at a time from the most loaded member to an eligible one holding
// at least two fewer. For subscriptions that differ between members the result is
// balanced as far as that greedy rule goes (Kafka's general uniform
// builder solves the same problem with a different heuristic).
func assignUniform(in assignInput) map[string]partSet {
	out := make(map[string]partSet, len(in.members))
	owner := map[tp]int{} // partition -> index into in.members
	count := make([]int, len(in.members))
	parts := map[[16]byte]int32{}
	for _, t := range in.topics {
		parts[t.id] = t.partitions
	}
	for i, m := range in.members {
		out[m.id] = partSet{}
		for _, p := range m.current.sortedBy(cmpTP) {
			if _, taken := owner[p]; taken || !m.topics[p.topic] || p.part >= parts[p.topic] {
				continue
			}
			owner[p] = i
			count[i]++
		}
	}
	all := make([]tp, 0, 64)
	for _, t := range in.topics {
		for p := range t.partitions {
			all = append(all, tp{t.id, p})
		}
	}
	// least returns the eligible member holding fewest (ties: lowest id),
	// or -1.
	least := func(topic [16]byte) int {
		best := -1
		for i, m := range in.members {
			if m.topics[topic] && (best < 0 || count[i] < count[best]) {
				best = i
			}
		}
		return best
	}
	for _, p := range all {
		if _, ok := owner[p]; ok {
			continue
		}
		if i := least(p.topic); i >= 0 {
			owner[p] = i
			count[i]++
		}
	}
	// Balance: move one partition at a time from the most loaded member
	// that has one an eligible member holding at least two fewer can take,
	// so only overloaded members give partitions up. Each move lowers the
	// sum of squared counts; the cap only bounds pathological inputs.
	order := make([]int, len(in.members))
	for moves := 0; moves < len(all); moves++ {
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(count[b], count[a]) })
		moved := false
		for _, a := range order {
			for _, p := range all {
				if o, ok := owner[p]; !ok || o != a {
					continue
				}
				if b := least(p.topic); b >= 0 && count[b] < count[a]-1 {
					owner[p] = b
					count[a]--
					count[b]++
					moved = true
					break
				}
			}
			if moved {
				break
			}
		}
		if !moved {
			break
		}
	}
	for p, i := range owner {
		out[in.members[i].id][p] = struct{}{}
	}
	return out
}

// assignRange gives each member subscribed to a topic a contiguous range of
// its partitions, members in member id order, the first partitions%members
// members one more (Kafka's range assignor without its co-partitioning
// stickiness: with random member ids a member that comes and goes can
// shift the ranges of others).
func assignRange(in assignInput) map[string]partSet {
	out := make(map[string]partSet, len(in.members))
	for _, m := range in.members {
		out[m.id] = partSet{}
	}
	for _, t := range in.topics {
		var subs []string
		for _, m := range in.members {
			if m.topics[t.id] {
				subs = append(subs, m.id)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n, k := int(t.partitions), len(subs)
		base, extra := n/k, n%k
		next := 0
		for i, id := range subs {
			size := base
			if i < extra {
				size++
			}
			for p := next; p < next+size; p++ {
				out[id][tp{t.id, int32(p)}] = struct{}{}
			}
			next += size
		}
	}
	return out
}
