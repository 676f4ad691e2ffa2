package group

import "slices"

// set is a set of partitions (partSet) or tasks (taskSet): what members
// own, are assigned and revoke, in both protocols the coordinator assigns.
type set[K comparable] map[K]struct{}

func (s set[K]) has(k K) bool { _, ok := s[k]; return ok }

func (s set[K]) clone() set[K] {
	c := make(set[K], len(s))
	for k := range s {
		c[k] = struct{}{}
	}
	return c
}

func (s set[K]) equal(o set[K]) bool {
	return len(s) == len(o) && s.subsetOf(o)
}

func (s set[K]) subsetOf(o set[K]) bool {
	for k := range s {
		if !o.has(k) {
			return false
		}
	}
	return true
}

// sortedBy returns the elements in cmp's order.
func (s set[K]) sortedBy(cmp func(a, b K) int) []K {
	out := make([]K, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.SortFunc(out, cmp)
	return out
}
