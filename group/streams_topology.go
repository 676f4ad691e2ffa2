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
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Status codes of StreamsGroupHeartbeat (KIP-1071).
const (
	statusStaleTopology          int8 = 0
	statusMissingSourceTopics    int8 = 1
	statusIncorrectlyPartitioned int8 = 2
	statusMissingInternalTopics  int8 = 3
	statusShutdownApplication    int8 = 4
)

// Caps on a topology a heartbeat may carry (INVALID_REQUEST beyond them):
// the topology is kept in memory for the group's life.
const (
	maxSubtopologies      = 1000
	maxTopologyTopics     = 10000 // topic names over all subtopologies
	maxTopicConfigs       = 100   // configs per internal topic
	maxStreamsRegexes     = 100
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
	regexes         []string
	res             []*regexp.Regexp
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
// returns INVALID_REQUEST's message.
func topologyFrom(t *kmsg.StreamsGroupHeartbeatRequestTopology) (*streamsTopology, string) {
	if len(t.Subtopologies) > maxSubtopologies {
		return nil, fmt.Sprintf("The topology has more than %d subtopologies.", maxSubtopologies)
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
		if in.SubtopologyID == "" {
			return nil, "Subtopology id can't be empty."
		}
		if seen[in.SubtopologyID] {
			return nil, "Subtopology " + in.SubtopologyID + " is named twice."
		}
		seen[in.SubtopologyID] = true
		names += len(in.SourceTopics) + len(in.SourceTopicRegex) + len(in.StateChangelogTopics) +
			len(in.RepartitionSinkTopics) + len(in.RepartitionSourceTopics)
		if names > maxTopologyTopics {
			return nil, fmt.Sprintf("The topology names more than %d topics.", maxTopologyTopics)
		}
		if len(in.SourceTopicRegex) > maxStreamsRegexes {
			return nil, fmt.Sprintf("Subtopology %s has more than %d source topic patterns.", in.SubtopologyID, maxStreamsRegexes)
		}
		s := subtopology{id: strings.Clone(in.SubtopologyID)}
		for _, n := range in.SourceTopics {
			s.sources = append(s.sources, strings.Clone(n))
		}
		for _, r := range in.SourceTopicRegex {
			re, err := regexp.Compile("^(?:" + r + ")$")
			if err != nil {
				return nil, fmt.Sprintf("Subtopology %s has an invalid source topic pattern %s: %v", in.SubtopologyID, r, err)
			}
			s.regexes, s.res = append(s.regexes, strings.Clone(r)), append(s.res, re)
		}
		for _, n := range in.RepartitionSinkTopics {
			s.repartitionSink = append(s.repartitionSink, strings.Clone(n))
		}
		var msg string
		if s.changelogs, msg = copyTopics(in.StateChangelogTopics); msg != "" {
			return nil, msg
		}
		if s.repartitionSrc, msg = copyTopics(in.RepartitionSourceTopics); msg != "" {
			return nil, msg
		}
		for _, cg := range in.CopartitionGroups {
			if len(cg.SourceTopics)+len(cg.RepartitionSourceTopics) > maxCopartitionMembers {
				return nil, "A copartition group is too large."
			}
			var grp []string
			for _, ix := range cg.SourceTopics {
				if ix < 0 || int(ix) >= len(s.sources) {
					return nil, fmt.Sprintf("Copartition group of subtopology %s names source topic index %d out of range.", in.SubtopologyID, ix)
				}
				grp = append(grp, s.sources[ix])
			}
			for _, ix := range cg.RepartitionSourceTopics {
				if ix < 0 || int(ix) >= len(s.repartitionSrc) {
					return nil, fmt.Sprintf("Copartition group of subtopology %s names repartition source topic index %d out of range.", in.SubtopologyID, ix)
				}
				grp = append(grp, s.repartitionSrc[ix].name)
			}
			s.copartition = append(s.copartition, grp)
		}
		out.subs = append(out.subs, s)
	}
	slices.SortFunc(out.subs, func(a, b subtopology) int { return strings.Compare(a.id, b.id) })
	return out, ""
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

// configure works out t over the topics of meta (name -> partitions).
func (t *streamsTopology) configure(meta map[string]int32) *configured {
	c := &configured{tasks: map[string]int32{}, sources: map[string][]string{}, internal: map[string]int32{}}
	var missing []string
	// Partition counts of external sources; repartition topics come after.
	parts := map[string]int32{}
	repart := map[string]*streamsTopic{}
	for i := range t.subs {
		s := &t.subs[i]
		for j := range s.repartitionSrc {
			repart[s.repartitionSrc[j].name] = &s.repartitionSrc[j]
		}
	}
	for i := range t.subs {
		s := &t.subs[i]
		var src []string
		for _, n := range s.sources {
			if repart[n] != nil {
				continue
			}
			if p, ok := meta[n]; ok {
				parts[n] = p
			} else if !slices.Contains(missing, n) {
				missing = append(missing, n)
			}
			src = append(src, n)
		}
		for _, re := range s.res {
			for _, n := range slices.Sorted(maps.Keys(meta)) {
				if re.MatchString(n) && repart[n] == nil && !slices.Contains(src, n) {
					parts[n] = meta[n]
					src = append(src, n)
				}
			}
		}
		for _, r := range s.repartitionSrc {
			src = append(src, r.name)
		}
		c.sources[s.id] = src
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		c.status = append(c.status, streamsStatus{statusMissingSourceTopics, "Source topics " + strings.Join(missing, ", ") + " are missing."})
		return c
	}
	// Repartition topics: an explicit count, else the largest source of
	// the subtopologies writing them, until nothing changes (each round
	// fixes at least one topic or stops).
	for name, r := range repart {
		if r.partitions > 0 {
			parts[name] = r.partitions
		}
	}
	writers := map[string][]*subtopology{}
	for i := range t.subs {
		for _, n := range t.subs[i].repartitionSink {
			writers[n] = append(writers[n], &t.subs[i])
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
				for _, src := range c.sources[w.id] {
					n = max(n, parts[src])
				}
			}
			if n > 0 {
				parts[name], changed = n, true
			}
		}
		// Copartitioned repartition topics without an explicit count take
		// the largest count of their group.
		for i := range t.subs {
			for _, grp := range t.subs[i].copartition {
				var n int32
				for _, name := range grp {
					n = max(n, parts[name])
				}
				for _, name := range grp {
					if r := repart[name]; r != nil && r.partitions == 0 && parts[name] != n && n > 0 {
						parts[name], changed = n, true
					}
				}
			}
		}
	}
	var wrong []string
	for i := range t.subs {
		s := &t.subs[i]
		var n int32
		for _, src := range c.sources[s.id] {
			n = max(n, parts[src])
		}
		c.tasks[s.id] = n
		for _, grp := range s.copartition {
			for _, name := range grp {
				if parts[name] != parts[grp[0]] && !slices.Contains(wrong, name) {
					wrong = append(wrong, name)
				}
			}
		}
		for _, r := range s.repartitionSrc {
			c.internal[r.name] = parts[r.name]
		}
		for _, cl := range s.changelogs {
			c.internal[cl.name] = n
		}
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		c.status = append(c.status, streamsStatus{statusIncorrectlyPartitioned, "Following topics are not copartitioned: [" + strings.Join(wrong, ", ") + "]"})
		return c
	}
	var absent []string
	for _, name := range slices.Sorted(maps.Keys(c.internal)) {
		want := c.internal[name]
		if want <= 0 {
			// Written by no subtopology with a source: nothing to size it by.
			wrong = append(wrong, name)
			continue
		}
		have, ok := meta[name]
		switch {
		case !ok:
			absent = append(absent, name)
			c.create = append(c.create, t.internalTopic(name, want))
		case have != want:
			wrong = append(wrong, name)
		}
	}
	if len(wrong) > 0 {
		c.status = append(c.status, streamsStatus{statusIncorrectlyPartitioned, "Internal topics have the wrong number of partitions: [" + strings.Join(wrong, ", ") + "]"})
		return c
	}
	if len(absent) > 0 {
		c.status = append(c.status, streamsStatus{statusMissingInternalTopics, "Internal topics are missing: [" + strings.Join(absent, ", ") + "]"})
		return c
	}
	c.ready = true
	return c
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
