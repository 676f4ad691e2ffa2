package group

// The task assignor of streams groups: sticky, balanced over processes and
// then over the members (stream threads) of each process, with standby
// tasks on other processes. A pure function of its input: no lock, no
// clock, any goroutine.

import (
	"cmp"
	"slices"
)

// taskID is one task: a subtopology and a partition.
type taskID struct {
	sub  string
	part int32
}

func cmpTask(a, b taskID) int {
	if c := cmp.Compare(a.sub, b.sub); c != 0 {
		return c
	}
	return cmp.Compare(a.part, b.part)
}

// taskSet is a set of tasks.
type taskSet = set[taskID]

// tasksAssigned is one member's share: its active and standby tasks.
type tasksAssigned struct {
	active, standby taskSet
}

// taskMember is a member as the assignor sees it.
type taskMember struct {
	id, process string
	prev        tasksAssigned // its previous target
}

// assignTasks spreads every task of tasks (subtopology -> task count) over
// members (sorted by id), as Kafka's sticky task assignor does: stateful
// tasks (of the subtopologies in stateful) and stateless ones are balanced
// each on their own; a task stays where it was active while that member is
// within its fair share, else goes to a member that held it as a standby
// (its state is there), else to the least loaded process and its least
// loaded member. Stateful tasks then get up to standbys standby tasks, one
// per process, never on the process running the task, preferring where
// they were before.
func assignTasks(members []taskMember, tasks map[string]int32, stateful map[string]bool, standbys int) map[string]tasksAssigned {
	out := make(map[string]tasksAssigned, len(members))
	if len(members) == 0 {
		return out
	}
	var withState, without []taskID
	for _, sub := range sortedKeys(tasks) {
		for p := int32(0); p < tasks[sub]; p++ {
			if stateful[sub] {
				withState = append(withState, taskID{sub, p})
			} else {
				without = append(without, taskID{sub, p})
			}
		}
	}
	byID := make(map[string]*taskMember, len(members))
	procSize := map[string]int{}
	for i := range members {
		m := &members[i]
		byID[m.id] = m
		out[m.id] = tasksAssigned{active: taskSet{}, standby: taskSet{}}
		procSize[m.process]++
	}
	prevOwner, prevStandby := map[taskID]string{}, map[taskID][]string{}
	for i := range members {
		for t := range members[i].prev.active {
			prevOwner[t] = members[i].id
		}
		for t := range members[i].prev.standby {
			prevStandby[t] = append(prevStandby[t], members[i].id)
		}
	}
	load, procLoad := map[string]int{}, map[string]int{} // over both kinds, for standbys
	for _, all := range [][]taskID{withState, without} {
		quota := (len(all) + len(members) - 1) / len(members)
		passLoad, passProc := map[string]int{}, map[string]int{}
		give := func(m *taskMember, t taskID) {
			out[m.id].active[t] = struct{}{}
			passLoad[m.id]++
			passProc[m.process]++
			load[m.id]++
			procLoad[m.process]++
		}
		var rest []taskID
		for _, t := range all {
			if id, ok := prevOwner[t]; ok && passLoad[id] < quota {
				give(byID[id], t)
				continue
			}
			rest = append(rest, t)
		}
		for _, t := range rest {
			var pick *taskMember
			for _, id := range prevStandby[t] {
				if m := byID[id]; m != nil && passLoad[id] < quota && (pick == nil || passLoad[id] < passLoad[pick.id]) {
					pick = m
				}
			}
			if pick == nil {
				pick = leastLoaded(members, passProc, procSize, passLoad, func(*taskMember) bool { return true })
			}
			give(pick, t)
		}
	}
	if standbys <= 0 {
		return out
	}
	owner := map[taskID]*taskMember{}
	for i := range members {
		for t := range out[members[i].id].active {
			owner[t] = &members[i]
		}
	}
	for _, t := range withState {
		used := map[string]bool{owner[t].process: true}
		for n := 0; n < standbys; n++ {
			var pick *taskMember
			for _, id := range prevStandby[t] {
				if m := byID[id]; m != nil && !used[m.process] {
					pick = m
					break
				}
			}
			if pick == nil {
				pick = leastLoaded(members, procLoad, procSize, load, func(m *taskMember) bool { return !used[m.process] })
			}
			if pick == nil {
				break // fewer processes than replicas: fewer standbys, as Kafka
			}
			used[pick.process] = true
			out[pick.id].standby[t] = struct{}{}
			load[pick.id]++
			procLoad[pick.process]++
		}
	}
	return out
}

// leastLoaded is the member ok allows in the least loaded process (tasks
// per member of the process), the least loaded member of it, the smallest
// id on ties; nil if ok allows none.
func leastLoaded(members []taskMember, procLoad, procSize, load map[string]int, ok func(*taskMember) bool) *taskMember {
	var best *taskMember
	for i := range members {
		m := &members[i]
		if !ok(m) {
			continue
		}
		if best == nil {
			best = m
			continue
		}
		// procLoad[m]/procSize[m] against procLoad[best]/procSize[best].
		a := procLoad[m.process] * procSize[best.process]
		b := procLoad[best.process] * procSize[m.process]
		if a < b || (a == b && load[m.id] < load[best.id]) {
			best = m
		}
	}
	return best
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
