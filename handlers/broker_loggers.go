package handlers

// Broker loggers (ConfigResource type BROKER_LOGGER, KIP-412): what
// `kafka-configs --entity-type broker-loggers` describes and changes. A
// Kafka broker lists its log4j loggers; the gateway has one logger, which
// it names root (log4j's root logger), and its level is the slog level
// of --log-level, mapped to log4j's names (TRACE below DEBUG, FATAL above
// ERROR). A change applies at once to this gateway alone and, as on
// Kafka, is not kept: a restart starts at --log-level again.

import (
	"context"
	"log/slog"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const rootLogger = "root"

// log4jLevels are Kafka's valid log levels and the slog levels they set,
// most verbose first; msgLogLevels lists them as Kafka's message does.
var log4jLevels = []struct {
	name  string
	level slog.Level
}{
	{"TRACE", slog.LevelDebug - 4}, {"DEBUG", slog.LevelDebug}, {"INFO", slog.LevelInfo},
	{"WARN", slog.LevelWarn}, {"ERROR", slog.LevelError}, {"FATAL", slog.LevelError + 4},
}

const msgLogLevels = "DEBUG, ERROR, FATAL, INFO, TRACE, WARN"

// log4jName is the log4j name of an slog level: the most verbose log4j
// level the slog level enables nothing below.
func log4jName(l slog.Level) string {
	for _, x := range log4jLevels[:len(log4jLevels)-1] {
		if l <= x.level {
			return x.name
		}
	}
	return log4jLevels[len(log4jLevels)-1].name
}

// logLevel is the gateway logger's level: Cfg.LogLevel when set, else the
// lowest level its handler is enabled for.
func (g *Gateway) logLevel() slog.Level {
	if g.Cfg.LogLevel != nil {
		return g.Cfg.LogLevel.Level()
	}
	if g.Log != nil {
		for _, x := range log4jLevels {
			if g.Log.Handler().Enabled(context.Background(), x.level) {
				return x.level
			}
		}
	}
	return slog.LevelInfo
}

// checkLoggerResource checks a BROKER_LOGGER name to describe, in Kafka's
// words: this broker's id.
func (g *Gateway) checkLoggerResource(name string) (int16, string) {
	if name == "" {
		return kerr.InvalidRequest.Code, "Broker id must not be empty"
	}
	if _, err := strconv.ParseInt(name, 10, 32); err != nil {
		return kerr.InvalidRequest.Code, "Broker id must be an integer, but it is: " + name
	}
	if name != g.nodeScope() {
		return kerr.InvalidRequest.Code, "Unexpected broker id, expected " + g.nodeScope() + " but received " + name
	}
	return 0, ""
}

// describeLoggers answers a BROKER_LOGGER resource of DescribeConfigs:
// the root logger and its level, as Kafka lists a logger (source
// DYNAMIC_BROKER_LOGGER_CONFIG, no synonyms). names filters (none: all).
func (g *Gateway) describeLoggers(name string, names []string) ([]kmsg.DescribeConfigsResponseResourceConfig, int16, string) {
	if code, msg := g.checkLoggerResource(name); code != 0 {
		return nil, code, msg
	}
	out := []kmsg.DescribeConfigsResponseResourceConfig{}
	if len(names) > 0 && !slices.Contains(names, rootLogger) {
		return out, 0, ""
	}
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.Value, c.Source = rootLogger, strp(log4jName(g.logLevel())), kmsg.ConfigSourceDynamicBrokerLoggerConfig
	c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}
	return append(out, c), 0, ""
}

// alterLoggers is a BROKER_LOGGER resource of IncrementalAlterConfigs,
// checked as Kafka's RuntimeLoggerManager checks it: ALTER_CONFIGS on the
// cluster, this broker's id, then every operation before any applies.
func (c *Call) alterLoggers(name string, validateOnly bool, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
	names, nulls := make([]string, len(ops)), []string(nil)
	for i, op := range ops {
		names[i] = op.Name
		if op.Value == nil && op.Op != kmsg.IncrementalAlterConfigOpDelete {
			nulls = append(nulls, op.Name)
		}
	}
	if code, msg := checkBrokerRequest(names, nulls); code != 0 {
		return code, msg
	}
	if !c.Authorized(kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeCluster, ClusterResource) {
		return kerr.ClusterAuthorizationFailed.Code, msgClusterAuthorizationFailed
	}
	n, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return kerr.InvalidRequest.Code, "Node id must be an integer, but it is: " + name
	}
	if int32(n) != c.G.Cfg.NodeID {
		return kerr.InvalidRequest.Code, "Unexpected node id. Expected " + c.G.nodeScope() + ", but received " + name
	}
	level, set := slog.Level(0), false
	for _, op := range ops {
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.Name != rootLogger {
				return kerr.InvalidConfig.Code, "Logger " + op.Name + " does not exist!"
			}
			found := false
			for _, x := range log4jLevels {
				if x.name == *op.Value {
					level, set, found = x.level, true, true
				}
			}
			if !found {
				return kerr.InvalidConfig.Code, "Cannot set the log level of " + op.Name + " to " + *op.Value +
					" as it is not a supported log level. Valid log levels are " + msgLogLevels
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			if op.Name != rootLogger {
				return kerr.InvalidConfig.Code, "Logger " + op.Name + " does not exist!"
			}
			return kerr.InvalidRequest.Code, "Removing the log level of the root logger is not allowed"
		case kmsg.IncrementalAlterConfigOpAppend:
			return kerr.InvalidRequest.Code, "APPEND operation is not allowed for the BROKER_LOGGER resource"
		case kmsg.IncrementalAlterConfigOpSubtract:
			return kerr.InvalidRequest.Code, "SUBTRACT operation is not allowed for the BROKER_LOGGER resource"
		default:
			return kerr.InvalidRequest.Code, "Unknown operation type " + strconv.Itoa(int(op.Op)) + " is not allowed for the BROKER_LOGGER resource"
		}
	}
	if !set || validateOnly {
		return 0, ""
	}
	if c.G.Cfg.LogLevel == nil {
		return kerr.InvalidRequest.Code, "the log level of this gateway cannot change: its logger was made without a level variable"
	}
	c.G.Cfg.LogLevel.Set(level)
	c.G.Log.Warn("log level changed", "logger", rootLogger, "level", log4jName(level))
	return 0, ""
}
