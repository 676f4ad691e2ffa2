package group

// A streams group's topology (KIP-1071) and what it needs of the stream's
// topics. The first member to join sends the topology; the coordinator
// keeps it, and on every heartbeat configures it against the current topic
// list: the partition count of every subtopology (its task count), of every
// repartition topic (from the subtopologies that write it and the
// copartition groups), of every changelog topic (its subtopology's task
// count), which source topics are missing and which internal topics must be
// created. Until it is fully configured no task is assigned and members are
// told why in the heartbeat's status. Pure functions of their input: no
// lock, no clock.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Status codes of StreamsGroupHeartbeat (KIP-1071).
const (
	statusStaleTopology          int8 = 0
	statusMissingSourceTopics    int8 = 1
	statusIncorrectlyPartitioned int8 = 2
	statusMissingInternalTopics  int8 = 3
	statusShutdownApplication    int8 = 4
	statusAssignmentDelayed      int8 = 5
)

// Caps on a topology a heartbeat may carry (INVALID_REQUEST beyond them):
// the topology is kept in memory for the group's life.
const (
	maxSubtopologies      = 1000
	maxTopologyTopics     = 10000 // topic names over all subtopologies
	maxTopicConfigs       = 100   // configs per internal topic
	maxCopartitionMembers = 1000
)

// streamsTopic is an internal topic as the topology describes it.
type streamsTopic struct {
	name       string
	partitions int32 // 0: derived
	repl       int16
	configs    [][2]string
}

// subtopology is one subtopology of a streams topology.
type subtopology struct {
	id              string
	sources         []string
	changelogs      []streamsTopic
	repartitionSink []string
	repartitionSrc  []streamsTopic
	copartition     [][]string // topic names per copartition group
}

// streamsTopology is the topology a streams group runs.
type streamsTopology struct {
	epoch int32
	subs  []subtopology // sorted by id
}

// topologyFrom copies req's topology, checked as Kafka checks it, or
// returns the error code and message (INVALID_REQUEST, or
// STREAMS_INVALID_TOPOLOGY for a changelog topic with a partition count).
func topologyFrom(t *kmsg.StreamsGroupHeartbeatRequestTopology) (*streamsTopology, int16, string) {
	bad := func(msg string) (*streamsTopology, int16, string) { return nil, kerr.InvalidRequest.Code, msg }
	if len(t.Subtopologies) > maxSubtopologies {
		return bad(fmt.Sprintf("The topology has more than %d subtopologies.", maxSubtopologies))
	}
	out := &streamsTopology{epoch: t.Epoch}
	names, seen := 0, map[string]bool{}
	copyTopics := func(in []kmsg.TopicInfo) ([]streamsTopic, string) {
		ts := make([]streamsTopic, 0, len(in))
		for i := range in {
			ti := &in[i]
			if ti.Topic == "" {
				return nil, "An internal topic of the topology has no name."
			}
			if len(ti.Configs) > maxTopicConfigs {
				return nil, fmt.Sprintf("Internal topic %s has more than %d configs.", ti.Topic, maxTopicConfigs)
			}
			if ti.NumPartitions < 0 {
				return nil, fmt.Sprintf("Internal topic %s has a negative number of partitions.", ti.Topic)
			}
			st := streamsTopic{name: strings.Clone(ti.Topic), partitions: ti.NumPartitions, repl: ti.ReplicationFactor}
			for _, c := range ti.Configs {
				st.configs = append(st.configs, [2]string{strings.Clone(c.Key), strings.Clone(c.Value)})
			}
			ts = append(ts, st)
		}
		return ts, ""
	}
	for i := range t.Subtopologies {
		in := &t.Subtopologies[i]
		switch {
		case in.SubtopologyID == "":
			return bad("Subtopology id can't be empty.")
		case seen[in.SubtopologyID]:
			return bad("Subtopology " + in.SubtopologyID + " is named twice.")
		case len(in.SourceTopicRegex) > 0:
			return bad("Regular expressions for source topics are not supported yet.")
		}
		seen[in.SubtopologyID] = true
		names += len(in.SourceTopics) + len(in.StateChangelogTopics) + len(in.RepartitionSinkTopics) + len(in.RepartitionSourceTopics)
		if names > maxTopologyTopics {
			return bad(fmt.Sprintf("The topology names more than %d topics.", maxTopologyTopics))
		}
		for _, cl := range in.StateChangelogTopics {
			if cl.NumPartitions != 0 {
				return nil, kerr.StreamsInvalidTopology.Code, fmt.Sprintf("Changelog topic %s must have an undefined partition count, but it is set to %d.", cl.Topic, cl.NumPartitions)
			}
		}
		s := subtopology{id: strings.Clone(in.SubtopologyID)}
		for _, n := range in.SourceTopics {
			s.sources = append(s.sources, strings.Clone(n))
		}
		for _, n := range in.RepartitionSinkTopics {
			s.repartitionSink = append(s.repartitionSink, strings.Clone(n))
		}
		var msg string
		if s.changelogs, msg = copyTopics(in.StateChangelogTopics); msg != "" {
			return bad(msg)
		}
		if s.repartitionSrc, msg = copyTopics(in.RepartitionSourceTopics); msg != "" {
			return bad(msg)
		}
		for _, cg := range in.CopartitionGroups {
			if len(cg.SourceTopics)+len(cg.RepartitionSourceTopics) > maxCopartitionMembers {
				return bad("A copartition group is too large.")
			}
			var grp []string
			for _, ix := range cg.SourceTopics {
				if ix < 0 || int(ix) >= len(s.sources) {
					return bad(fmt.Sprintf("Copartition group of subtopology %s names source topic index %d out of range.", in.SubtopologyID, ix))
				}
				grp = append(grp, s.sources[ix])
			}
			for _, ix := range cg.RepartitionSourceTopics {
				if ix < 0 || int(ix) >= len(s.repartitionSrc) {
					return bad(fmt.Sprintf("Copartition group of subtopology %s names repartition source topic index %d out of range.", in.SubtopologyID, ix))
				}
				grp = append(grp, s.repartitionSrc[ix].name)
			}
			s.copartition = append(s.copartition, grp)
		}
		out.subs = append(out.subs, s)
	}
	slices.SortFunc(out.subs, func(a, b subtopology) int { return strings.Compare(a.id, b.id) })
	return out, 0, ""
}

// streamsStatus is one status entry of a heartbeat response.
type streamsStatus struct {
	code   int8
	detail string
}

// configured is a topology configured against one topic list.
type configured struct {
	tasks    map[string]int32 // subtopology id -> partitions (tasks)
	sources  map[string][]string
	create   []streamsTopic // internal topics to create, partitions set
	status   []streamsStatus
	ready    bool             // every topic there and rightly partitioned: tasks may be assigned
	internal map[string]int32 // internal topic -> required partitions
}

// configure works out t over the topics of meta (name -> partitions), as
// Kafka's coordinator does: the status texts are Kafka's.
func (t *streamsTopology) configure(meta map[string]int32) *configured {
	c := &configured{tasks: map[string]int32{}, sources: map[string][]string{}, internal: map[string]int32{}}
	repart := map[string]*streamsTopic{}
	for i := range t.subs {
		s := &t.subs[i]
		for j := range s.repartitionSrc {
			repart[s.repartitionSrc[j].name] = &s.repartitionSrc[j]
		}
	}
	// External source topics must exist; repartition topics are sized next.
	parts := map[string]int32{}
	var missing []string
	for i := range t.subs {
		s := &t.subs[i]
		var src []string
		for _, n := range s.sources {
			if repart[n] == nil {
				if p, ok := meta[n]; ok {
					parts[n] = p
				} else if !slices.Contains(missing, n) {
					missing = append(missing, n)
				}
			}
			if !slices.Contains(src, n) {
				src = append(src, n)
			}
		}
		for _, r := range s.repartitionSrc {
			if !slices.Contains(src, r.name) {
				src = append(src, r.name)
			}
		}
		c.sources[s.id] = src
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		c.status = append(c.status, streamsStatus{statusMissingSourceTopics, "Source topics " + summarizeTopics(missing) + " are missing."})
		return c
	}
	t.sizeRepartitionTopics(c, parts, repart)
	for i := range t.subs {
		s := &t.subs[i]
		for _, grp := range s.copartition {
			for _, name := range grp {
				if parts[name] != parts[grp[0]] {
					pairs := make([]string, 0, len(grp))
					for _, n := range slices.Sorted(slices.Values(grp)) {
						pairs = append(pairs, fmt.Sprintf("%s=%d", n, parts[n]))
					}
					c.status = append(c.status, streamsStatus{statusIncorrectlyPartitioned,
						"Following topics do not have the same number of partitions: [{" + strings.Join(pairs, ", ") + "}]"})
					return c
				}
			}
		}
	}
	// Internal topics: repartition topics first, then changelogs, in
	// subtopology order (as Kafka lists them).
	var order []string
	for i := range t.subs {
		s := &t.subs[i]
		var n int32
		for _, src := range c.sources[s.id] {
			n = max(n, parts[src])
		}
		c.tasks[s.id] = n
		for _, r := range s.repartitionSrc {
			c.internal[r.name] = parts[r.name]
			order = append(order, r.name)
		}
	}
	for i := range t.subs {
		for _, cl := range t.subs[i].changelogs {
			c.internal[cl.name] = c.tasks[t.subs[i].id]
			order = append(order, cl.name)
		}
	}
	var absent []string
	for _, name := range order {
		want := c.internal[name]
		have, ok := meta[name]
		switch {
		case want <= 0:
			// Written by no subtopology with a source: nothing sizes it.
			c.status = append(c.status, streamsStatus{statusIncorrectlyPartitioned, "Number of partitions of internal topic " + name + " cannot be determined."})
			return c
		case ok && have != want:
			c.status = append(c.status, streamsStatus{statusIncorrectlyPartitioned,
				fmt.Sprintf("Existing topic %s has different number of partitions: expected %d, found %d", name, want, have)})
			return c
		case !ok && !slices.Contains(absent, name):
			absent = append(absent, name)
			c.create = append(c.create, t.internalTopic(name, want))
		}
	}
	if len(absent) > 0 {
		c.status = append(c.status, streamsStatus{statusMissingInternalTopics, "Internal topics are missing: " + summarizeTopics(absent)})
		return c
	}
	c.ready = true
	return c
}

// sizeRepartitionTopics sets the partition count of every repartition
// topic in parts: its explicit count, else the largest source of the
// subtopologies writing it; copartitioned ones without an explicit count
// take their group's largest. Repeated until nothing changes (each round
// sizes at least one more topic or ends).
func (t *streamsTopology) sizeRepartitionTopics(c *configured, parts map[string]int32, repart map[string]*streamsTopic) {
	for name, r := range repart {
		if r.partitions > 0 {
			parts[name] = r.partitions
		}
	}
	writers := map[string][]string{}
	for i := range t.subs {
		for _, n := range t.subs[i].repartitionSink {
			writers[n] = append(writers[n], t.subs[i].id)
		}
	}
	for changed := true; changed; {
		changed = false
		for name := range repart {
			if _, ok := parts[name]; ok {
				continue
			}
			var n int32
			for _, w := range writers[name] {
				for _, src := range c.sources[w] {
					n = max(n, parts[src])
				}
			}
			if n > 0 {
				parts[name], changed = n, true
			}
		}
		for i := range t.subs {
			for _, grp := range t.subs[i].copartition {
				var n int32
				for _, name := range grp {
					n = max(n, parts[name])
				}
				for _, name := range grp {
					if r := repart[name]; r != nil && r.partitions == 0 && n > 0 && parts[name] != n {
						parts[name], changed = n, true
					}
				}
			}
		}
	}
}

// summarizeTopics names at most three topics, as Kafka's status texts do.
func summarizeTopics(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d additional topics", len(names)-3)
}

// internalTopic is the internal topic name with its configs, to create
// with partitions.
func (t *streamsTopology) internalTopic(name string, partitions int32) streamsTopic {
	for i := range t.subs {
		for _, l := range [][]streamsTopic{t.subs[i].changelogs, t.subs[i].repartitionSrc} {
			for _, it := range l {
				if it.name == name {
					it.partitions = partitions
					return it
				}
			}
		}
	}
	return streamsTopic{name: name, partitions: partitions}
}

// equal reports whether two topologies have the same subtopologies (the
// epoch aside).
func (t *streamsTopology) equal(o *streamsTopology) bool {
	return slices.EqualFunc(t.subs, o.subs, func(a, b subtopology) bool {
		return a.id == b.id && slices.Equal(a.sources, b.sources) && slices.Equal(a.repartitionSink, b.repartitionSink) &&
			topicsEqual(a.changelogs, b.changelogs) && topicsEqual(a.repartitionSrc, b.repartitionSrc) &&
			slices.EqualFunc(a.copartition, b.copartition, slices.Equal)
	})
}

func topicsEqual(a, b []streamsTopic) bool {
	return slices.EqualFunc(a, b, func(x, y streamsTopic) bool {
		return x.name == y.name && x.partitions == y.partitions && x.repl == y.repl && slices.Equal(x.configs, y.configs)
	})
}
