package policy

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// The conformance table: the assertions of envoyproxy/ratelimit's
// test/config/config_test.go (commit f2fb157), on its own YAML files
// (testdata/envoy) or on its inline configurations written as YAML. Each
// row passes as Envoy's service behaves, or names the deliberate
// difference (docs/policies.md lists them) and checks sluice's behaviour.

// envoyWant is what GetLimit returns: no limit (nil), or a limit.
type envoyWant struct {
	rpu       uint32
	unit      Unit
	name      string
	unlimited bool
	shadow    bool
	stats     string // the limit's stats key; "" to skip
}

type envoyRow struct {
	test     string   // the Envoy test the row ports
	files    []string // under testdata/envoy
	inline   string   // or one inline file
	domain   string
	entries  []string // key, value, key, value, …
	override *EnvoyLimit
	want     *envoyWant
	loadErr  string // Envoy's error text after "file: "
	errFile  string // the file the error names (default: the last)
	differ   string // a deliberate difference; the row then checks sluice's own behaviour
}

func lim(rpu uint32, unit Unit, stats string) *envoyWant {
	return &envoyWant{rpu: rpu, unit: unit, stats: stats}
}

func kv(s ...string) []string { return s }

var basic = []string{"basic_config.yaml"}

var envoyRows = []envoyRow{
	// TestBasicConfig
	{test: "TestBasicConfig", files: basic, domain: "foo_domain"},
	{test: "TestBasicConfig", files: basic, domain: "test-domain"},
	{test: "TestBasicConfig", files: basic, domain: "test-domain", entries: kv("key1", "something")},
	{test: "TestBasicConfig", files: basic, domain: "test-domain", entries: kv("key1", "value1")},
	{test: "TestBasicConfig", files: basic, domain: "test-domain", entries: kv("key2", "value2", "subkey", "subvalue")},
	{test: "TestBasicConfig", files: basic, domain: "test-domain", entries: kv("key5", "value5", "subkey5", "subvalue")},
	{test: "TestBasicConfig", files: basic, domain: "test-domain", entries: kv("key1", "value1", "subkey1", "something"),
		want: lim(5, UnitSecond, "test-domain.key1_value1.subkey1")},
	{test: "TestBasicConfig", files: basic, domain: "test-domain", entries: kv("key1", "value1", "subkey1", "subvalue1"),
		want: lim(10, UnitSecond, "test-domain.key1_value1.subkey1_subvalue1")},
	{test: "TestBasicConfig", files: basic, domain: "test-domain", entries: kv("key2", "something"),
		want: lim(20, UnitMinute, "test-domain.key2")},
	{test: "TestBasicConfig", files: basic, domain: "test-domain", entries: kv("key2", "value2"),
		want: lim(30, UnitMinute, "test-domain.key2_value2")},
	{test: "TestBasicConfig", files: basic, domain: "test-domain", entries: kv("key2", "value3")},
	{test: "TestBasicConfig", files: basic, domain: "test-domain", entries: kv("key3", "foo"),
		want: lim(1, UnitHour, "test-domain.key3")},
	{test: "TestBasicConfig", files: basic, domain: "test-domain", entries: kv("key4", "foo"),
		want: &envoyWant{rpu: 1, unit: UnitDay, name: "key4_rate_limit", stats: "test-domain.key4"}},
	{test: "TestBasicConfig", files: basic, domain: "test-domain", entries: kv("key6", "foo"),
		want: &envoyWant{unlimited: true, stats: "test-domain.key6"}},
	{test: "TestBasicConfig", files: basic, domain: "test-domain", entries: kv("key7", "unspecified_value"),
		want: lim(70, UnitMinute, "test-domain.key7_unspecified_value")},
	{test: "TestBasicConfig", files: basic, domain: "test-domain", entries: kv("key7", "another_value"),
		want: lim(70, UnitMinute, "test-domain.key7_another_value")},

	// TestDomainMerge and TestDuplicateKeyDomainMerge run with MERGE_DOMAIN_CONFIG=true.
	{test: "TestDomainMerge", files: []string{"merge_domain_key1.yaml", "merge_domain_key2.yaml"},
		loadErr: "duplicate domain 'test-domain' in config file",
		differ:  "MERGE_DOMAIN_CONFIG is not supported: a domain in two files is refused, Envoy's default"},
	{test: "TestDuplicateKeyDomainMerge", files: []string{"merge_domain_key1.yaml", "merge_domain_key1.yaml"},
		loadErr: "duplicate domain 'test-domain' in config file",
		differ:  "MERGE_DOMAIN_CONFIG is not supported: the second file is refused for its domain, not its key"},

	// TestConfigLimitOverride
	{test: "TestConfigLimitOverride", files: basic, domain: "foo_domain", override: &EnvoyLimit{10, UnitDay}},
	{test: "TestConfigLimitOverride", files: basic, domain: "test-domain", entries: kv("key1", "value1", "subkey1", "something"),
		override: &EnvoyLimit{10, UnitDay}, want: lim(10, UnitDay, "test-domain.key1_value1.subkey1_something")},
	{test: "TestConfigLimitOverride", files: basic, domain: "test-domain", entries: kv("key1", "value1", "subkey1", "something"),
		override: &EnvoyLimit{42, UnitHour}, want: lim(42, UnitHour, "test-domain.key1_value1.subkey1_something")},
	{test: "TestConfigLimitOverride", files: basic, domain: "test-domain", entries: kv("key1", "value1", "subkey1", "something_else"),
		override: &EnvoyLimit{42, UnitHour}, want: lim(42, UnitHour, "test-domain.key1_value1.subkey1_something_else")},

	// The refusals.
	{test: "TestEmptyDomain", files: []string{"empty_domain.yaml"}, loadErr: "config file cannot have empty domain"},
	{test: "TestDuplicateDomain", files: []string{"basic_config.yaml", "duplicate_domain.yaml"},
		loadErr: "duplicate domain 'test-domain' in config file"},
	{test: "TestEmptyKey", files: []string{"empty_key.yaml"}, loadErr: "descriptor has empty key"},
	{test: "TestDuplicateKey", files: []string{"duplicate_key.yaml"},
		loadErr: "duplicate descriptor composite key 'test-domain.key1_value1'"},
	{test: "TestBadLimitUnit", files: []string{"bad_limit_unit.yaml"}, loadErr: "invalid rate limit unit 'foo'"},
	{test: "TestReplacesSelf", files: []string{"replaces_self.yaml"}, loadErr: "replaces should not contain name of same descriptor"},
	{test: "TestReplacesEmpty", files: []string{"replaces_empty.yaml"}, loadErr: "should not have an empty replaces entry"},
	{test: "TestBadYaml", files: []string{"bad_yaml.yaml"},
		loadErr: "error loading config file: yaml: line 2: found unexpected end of stream"},
	{test: "TestMisspelledKey", files: []string{"misspelled_key.yaml"}, loadErr: "config error, unknown key 'ratelimit'"},
	{test: "TestMisspelledKey", files: []string{"misspelled_key2.yaml"}, loadErr: "config error, unknown key 'requestsperunit'"},
	{test: "TestNonStringKey", files: []string{"non_string_key.yaml"}, loadErr: "config error, key is not of type string: 0.25"},
	{test: "TestNonMapList", files: []string{"non_map_list.yaml"},
		loadErr: "config error, yaml file contains list of type other than map: a"},
	{test: "TestUnlimitedWithRateLimitUnit", files: []string{"unlimited_with_unit.yaml"},
		loadErr: "should not specify rate limit unit when unlimited"},

	// TestShadowModeConfig
	{test: "TestShadowModeConfig", files: []string{"shadowmode_config.yaml"}, domain: "test-domain",
		entries: kv("key1", "value1", "subkey1", "something"), want: lim(5, UnitSecond, "test-domain.key1_value1.subkey1")},
	{test: "TestShadowModeConfig", files: []string{"shadowmode_config.yaml"}, domain: "test-domain",
		entries: kv("key1", "value1", "subkey1", "subvalue1"),
		want:    &envoyWant{rpu: 10, unit: UnitSecond, shadow: true, stats: "test-domain.key1_value1.subkey1_subvalue1"}},
	{test: "TestShadowModeConfig", files: []string{"shadowmode_config.yaml"}, domain: "test-domain",
		entries: kv("key2", "something"), want: &envoyWant{rpu: 20, unit: UnitMinute, shadow: true, stats: "test-domain.key2"}},
	{test: "TestShadowModeConfig", files: []string{"shadowmode_config.yaml"}, domain: "test-domain",
		entries: kv("key2", "value2"), want: lim(30, UnitMinute, "test-domain.key2_value2")},

	// TestWildcardConfig
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("noVal", "foo1"), want: lim(20, UnitMinute, "test-domain.noVal")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("noVal", "foo2"), want: lim(20, UnitMinute, "test-domain.noVal")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("wild", "foo1"), want: lim(20, UnitMinute, "test-domain.wild_foo*")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("wild", "foo2"), want: lim(20, UnitMinute, "test-domain.wild_foo*")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("nestedWild", "val1", "wild", "goo2"),
		want: lim(20, UnitMinute, "test-domain.nestedWild_val1.wild_goo*")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("wild", "bar")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("noWild", "foo1")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("midWild", "barab"), want: lim(20, UnitMinute, "test-domain.midWild_bar*b")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("midWild", "bar123b"), want: lim(20, UnitMinute, "test-domain.midWild_bar*b")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("midWild", "barb"), want: lim(20, UnitMinute, "test-domain.midWild_bar*b")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("midWild", "bara")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("midWild", "xbarb")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("multiWild", "foo123bar456baz"),
		want: lim(10, UnitMinute, "test-domain.multiWild_foo*bar*baz")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("multiWild", "foobarbaz"),
		want: lim(10, UnitMinute, "test-domain.multiWild_foo*bar*baz")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("multiWild", "foo123baz")},
	{test: "TestWildcardConfig", files: wildcard, domain: "test-domain", entries: kv("multiWild", "bar456baz")},

	// TestDetailedMetric
	{test: "TestDetailedMetric", inline: detailedNested(true, false), domain: "nested", entries: kv("key-1", "value-1"),
		want: lim(100, UnitMinute, "nested.key-1_value-1")},
	{test: "TestDetailedMetric", inline: detailedNested(false, false), domain: "nested", entries: kv("key-1", "value-1"),
		want: lim(100, UnitMinute, "nested.key-1")},
	{test: "TestDetailedMetric", inline: detailedNested(true, true), domain: "nested", entries: kv("key-1", "value-1", "key-2", "value-2"),
		want: lim(5, UnitMinute, "nested.key-1_value-1.key-2_value-2")},
	{test: "TestDetailedMetric", inline: detailedNested(false, false), domain: "nested", entries: kv("key-1", "value-1", "key-2", "value-2"),
		want: lim(5, UnitMinute, "nested.key-1.key-2")},
	{test: "TestDetailedMetric", inline: detailedRealistic, domain: "nested", entries: kv("key_1", "value-for-key-1"),
		want: lim(500, UnitMinute, "nested.key_1_value-for-key-1")},
	{test: "TestDetailedMetric", inline: detailedRealistic, domain: "nested", entries: kv("key_2", "key-2-value"),
		want: lim(5000, UnitMinute, "nested.key_2_key-2-value")},
	{test: "TestDetailedMetric", inline: detailedRealistic, domain: "nested", entries: kv("key_2", "key-2-value", "key_3", "requested-key3-value"),
		want: lim(5, UnitMinute, "nested.key_2_key-2-value.key_3_requested-key3-value")},

	// TestValueToMetric_*
	{test: "TestValueToMetric_UsesRuntimeValuesInStats", inline: vtmRouteMethod("", false), domain: "domain",
		entries: kv("route", "draw", "http_method", "GET", "subject_id", "123"), want: lim(60, UnitMinute, "domain.route_draw.http_method_GET.subject_id")},
	{test: "TestValueToMetric_DefaultKeyIncludesValueAtThatLevel", inline: vtmTwoLevels, domain: "d",
		entries: kv("k1", "A", "k2", "foo"), want: lim(1, UnitSecond, "d.k1_A.k2")},
	{test: "TestValueToMetric_MidLevelOnly", inline: vtmMidLevel, domain: "d",
		entries: kv("k1", "X", "k2", "Y", "k3", "Z"), want: lim(1, UnitSecond, "d.k1.k2_Y.k3")},
	{test: "TestValueToMetric_NoFlag_Unchanged", inline: vtmNoFlag, domain: "d",
		entries: kv("k1", "X", "k2", "Y"), want: lim(1, UnitSecond, "d.k1.k2")},
	{test: "TestValueToMetric_DoesNotOverrideDetailedMetric", inline: vtmRouteMethod("", true), domain: "domain",
		entries: kv("route", "draw", "http_method", "GET", "subject_id", "123"), want: lim(60, UnitMinute, "domain.route_draw.http_method_GET.subject_id_123")},
	{test: "TestValueToMetric_WithConfiguredValues", inline: vtmConfigured, domain: "test-domain",
		entries: kv("route", "api", "http_method", "GET", "subject_id", "user123"), want: lim(60, UnitMinute, "test-domain.route_api.http_method_GET.subject_id")},
	{test: "TestValueToMetric_WithConfiguredValues", inline: vtmConfigured, domain: "test-domain",
		entries: kv("route", "api", "http_method", "POST", "subject_id", "user456"), want: lim(30, UnitMinute, "test-domain.route_api.http_method_POST.subject_id")},
	{test: "TestValueToMetric_WithWildcard", inline: vtmWildcard, domain: "domain",
		entries: kv("user", "alice", "action", "readfile", "resource", "documents"), want: lim(100, UnitMinute, "domain.user_alice.action_readfile.resource")},
	{test: "TestValueToMetric_WithWildcard", inline: vtmWildcard, domain: "domain",
		entries: kv("user", "bob", "action", "readdata", "resource", "database"), want: lim(100, UnitMinute, "domain.user_bob.action_readdata.resource")},
	{test: "TestValueToMetric_WithEmptyValue", inline: vtmRouteMethod("", false), domain: "domain",
		entries: kv("route", "", "http_method", "GET", "subject_id", "123"), want: lim(60, UnitMinute, "domain.route.http_method_GET.subject_id")},
	{test: "TestValueToMetric_WithEmptyValue", inline: vtmRouteMethod("", false), domain: "domain",
		entries: kv("route", "draw", "http_method", "", "subject_id", "123"), want: lim(60, UnitMinute, "domain.route_draw.http_method.subject_id")},
	{test: "TestValueToMetric_WithEmptyValue", inline: vtmRouteMethod("", false), domain: "domain",
		entries: kv("route", "", "http_method", "", "subject_id", "123"), want: lim(60, UnitMinute, "domain.route.http_method.subject_id")},

	// TestShareThreshold
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("files", "files/a.pdf"), want: lim(100, UnitMinute, "test-domain.files_files/*")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("files", "files/c.txt"), want: lim(100, UnitMinute, "test-domain.files_files/*")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("route", "api/v1", "method", "GET"),
		want: lim(60, UnitMinute, "test-domain.route_api/*.method")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("service", "svc/user", "endpoint", "get"),
		want: lim(80, UnitMinute, "test-domain.service_svc/*.endpoint_get")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("nested", "parent", "files", "nested/file1.txt"),
		want: lim(200, UnitMinute, "test-domain.nested_parent.files_nested/*")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("files", "top/file1.txt", "files", "nested/file1.txt"),
		want: lim(300, UnitMinute, "test-domain.files_top/*.files_nested/*")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("path", "path/foo", "file", "file/doc1", "type", "pdf"),
		want: lim(120, UnitMinute, "test-domain.path_path/*.file_file/*.type")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("user", "user/alice", "resource", "res/file1", "action", "read"),
		want: lim(150, UnitMinute, "test-domain.user_user/*.resource_res/*.action")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("file", "test1"), want: lim(50, UnitMinute, "test-domain.file_test1")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("file", "test23"), want: lim(100, UnitMinute, "test-domain.file_test*")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("midpath", "/api-beta-v1"), want: lim(100, UnitMinute, "test-domain.midpath_/api*v1")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("midpath", "/api/v2")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("multiroute", "svceprpc"), want: lim(50, UnitMinute, "test-domain.multiroute_svc*ep*rpc")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("multiroute", "svcABCrpc")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("midroute", "/api-beta-v2"), want: lim(80, UnitMinute, "test-domain.midroute_/api*v2")},
	{test: "TestShareThreshold", files: share, domain: "test-domain", entries: kv("tenant", "t99prod", "resource", "resBBBv2"),
		want: lim(60, UnitMinute, "test-domain.tenant_t*prod.resource_res*v2")},

	// TestWildcardStatsBehavior
	{test: "TestWildcardStatsBehavior", inline: wildFlags("foo*", ""), domain: "test-domain", entries: kv("wild", "foo1"), want: lim(20, UnitMinute, "test-domain.wild_foo*")},
	{test: "TestWildcardStatsBehavior", inline: wildFlags("foo*", "value_to_metric: true"), domain: "test-domain", entries: kv("wild", "foo1"), want: lim(20, UnitMinute, "test-domain.wild_foo1")},
	{test: "TestWildcardStatsBehavior", inline: wildFlags("foo*", "share_threshold: true"), domain: "test-domain", entries: kv("wild", "foo1"), want: lim(20, UnitMinute, "test-domain.wild_foo*")},
	{test: "TestWildcardStatsBehavior", inline: wildFlags("foo*", "share_threshold: true\n    value_to_metric: true"), domain: "test-domain",
		entries: kv("wild", "foo1"), want: lim(20, UnitMinute, "test-domain.wild_foo*")},
	{test: "TestWildcardStatsBehavior", inline: wildOther, domain: "test-domain", entries: kv("wild", "foo1", "other", "bar", "limit", "X"),
		want: lim(20, UnitMinute, "test-domain.wild_foo*.other_bar.limit")},
	{test: "TestWildcardStatsBehavior", inline: wildFlags("foo*bar*", ""), domain: "test-domain", entries: kv("wild", "fooXbarY"), want: lim(20, UnitMinute, "test-domain.wild_foo*bar*")},
	{test: "TestWildcardStatsBehavior", inline: wildFlags("foo*bar*", "value_to_metric: true"), domain: "test-domain",
		entries: kv("wild", "foo123bar456"), want: lim(20, UnitMinute, "test-domain.wild_foo123bar456")},

	// TestMetadata: the limits match; the metadata itself is not kept.
	{test: "TestMetadata", files: []string{"metadata.yaml"}, domain: "test-domain", entries: kv("key1", "value1", "subkey1", "something"),
		want:   lim(5, UnitSecond, "test-domain.key1_value1.subkey1"),
		differ: "metadata is accepted and ignored (except metadata.sluice): not returned as dynamic metadata"},
	{test: "TestMetadata", files: []string{"metadata.yaml"}, domain: "test-domain", entries: kv("key2", "something"),
		want:   lim(20, UnitMinute, "test-domain.key2"),
		differ: "metadata is accepted and ignored (except metadata.sluice): not returned as dynamic metadata"},
}

var (
	wildcard = []string{"wildcard.yaml"}
	share    = []string{"share_threshold.yaml"}
)

func detailedNested(top, sub bool) string {
	return `domain: nested
descriptors:
  - key: key-1
    detailed_metric: ` + boolText(top) + `
    rate_limit: {requests_per_unit: 100, unit: minute}
    descriptors:
      - key: key-2
        detailed_metric: ` + boolText(sub) + `
        rate_limit: {requests_per_unit: 5, unit: minute}
`
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

const detailedRealistic = `domain: nested
descriptors:
  - key: key_1
    rate_limit: {requests_per_unit: 500, unit: minute}
    detailed_metric: true
  - key: key_1
    value: some-value-for-key-1
    rate_limit: {requests_per_unit: 500, unit: minute}
  - key: key_2
    rate_limit: {requests_per_unit: 5000, unit: minute}
    detailed_metric: true
    descriptors:
      - key: key_3
        detailed_metric: true
      - key: key_3
        value: requested-key3-value
        rate_limit: {requests_per_unit: 5, unit: minute}
        detailed_metric: true
  - key: key_2
    value: specific-id
    rate_limit: {requests_per_unit: 50000, unit: minute}
    detailed_metric: true
    descriptors:
      - key: key_3
        detailed_metric: true
      - key: key_3
        value: requested-key3-value
        rate_limit: {requests_per_unit: 100, unit: minute}
        detailed_metric: true
`

func vtmRouteMethod(_ string, detailed bool) string {
	return `domain: domain
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: http_method
        value_to_metric: true
        descriptors:
          - key: subject_id
            detailed_metric: ` + boolText(detailed) + `
            rate_limit: {requests_per_unit: 60, unit: minute}
`
}

const vtmTwoLevels = `domain: d
descriptors:
  - key: k1
    value_to_metric: true
    descriptors:
      - key: k2
        rate_limit: {requests_per_unit: 1, unit: second}
`

const vtmMidLevel = `domain: d
descriptors:
  - key: k1
    descriptors:
      - key: k2
        value_to_metric: true
        descriptors:
          - key: k3
            rate_limit: {requests_per_unit: 1, unit: second}
`

const vtmNoFlag = `domain: d
descriptors:
  - key: k1
    descriptors:
      - key: k2
        rate_limit: {requests_per_unit: 1, unit: second}
`

const vtmConfigured = `domain: test-domain
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: http_method
        value: GET
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit: {requests_per_unit: 60, unit: minute}
      - key: http_method
        value: POST
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit: {requests_per_unit: 30, unit: minute}
`

const vtmWildcard = `domain: domain
descriptors:
  - key: user
    value_to_metric: true
    descriptors:
      - key: action
        value: read*
        value_to_metric: true
        descriptors:
          - key: resource
            rate_limit: {requests_per_unit: 100, unit: minute}
`

func wildFlags(value, flags string) string {
	return `domain: test-domain
descriptors:
  - key: wild
    value: "` + value + `"
    ` + flags + `
    rate_limit: {requests_per_unit: 20, unit: minute}
`
}

const wildOther = `domain: test-domain
descriptors:
  - key: wild
    value: foo*
    descriptors:
      - key: other
        value_to_metric: true
        descriptors:
          - key: limit
            rate_limit: {requests_per_unit: 20, unit: minute}
`

// loadRow loads a row's files.
func loadRow(row envoyRow) (*RuleSet, error) {
	if row.inline != "" {
		return Parse([]File{{Name: "inline", Data: []byte(row.inline)}}, Options{})
	}
	paths := make([]string, len(row.files))
	for i, f := range row.files {
		paths[i] = filepath.Join("testdata", "envoy", f)
	}
	return Load(paths, Options{})
}

// getLimit is envoyproxy/ratelimit's GetLimit through Plan and
// AppendStatsKey: nil when no limit applies.
func getLimit(t *testing.T, rs *RuleSet, domain string, entries []string, override *EnvoyLimit) *envoyWant {
	t.Helper()
	d := Descriptor{}
	for i := 0; i+1 < len(entries); i += 2 {
		d.Entries = append(d.Entries, Entry{Key: []byte(entries[i]), Value: []byte(entries[i+1])})
	}
	if override != nil {
		d.Limit = *override
	}
	var p Plan
	if err := rs.Plan(&p, []byte(domain), 1, []Descriptor{d}); err != nil {
		t.Fatalf("Plan: %v", err)
	}
	it := p.Items[0]
	if it.Flags&FlagNoRule != 0 {
		return nil
	}
	stats, ok := rs.AppendStatsKey(nil, []byte(domain), d)
	if !ok {
		t.Fatalf("AppendStatsKey found no limit for a planned limit")
	}
	return &envoyWant{rpu: it.Envoy.RequestsPerUnit, unit: it.Envoy.Unit, name: it.Name,
		unlimited: it.Flags&FlagUnlimited != 0, shadow: it.Flags&FlagShadow != 0, stats: string(stats)}
}

func TestEnvoyConformance(t *testing.T) {
	differences := 0
	for i, row := range envoyRows {
		rs, err := loadRow(row)
		if row.differ != "" {
			differences++
		}
		if row.loadErr != "" {
			var le *LoadError
			if !errors.As(err, &le) || len(le.Faults) == 0 {
				t.Errorf("row %d (%s): load error = %v; want %q", i, row.test, err, row.loadErr)
				continue
			}
			f := le.Faults[0]
			wantFile := row.errFile
			if wantFile == "" && row.inline == "" {
				wantFile = filepath.Join("testdata", "envoy", row.files[len(row.files)-1])
			}
			if f.Msg != row.loadErr || wantFile != "" && f.File != wantFile || f.Line == 0 {
				t.Errorf("row %d (%s): fault = %q at %s:%d:%d; want %q in %s with a line", i, row.test, f.Msg, f.File, f.Line, f.Column, row.loadErr, wantFile)
			}
			continue
		}
		if err != nil {
			t.Errorf("row %d (%s): load: %v", i, row.test, err)
			continue
		}
		got := getLimit(t, rs, row.domain, row.entries, row.override)
		switch {
		case row.want == nil && got != nil:
			t.Errorf("row %d (%s): %s %v = %+v; want no limit", i, row.test, row.domain, row.entries, *got)
		case row.want != nil && got == nil:
			t.Errorf("row %d (%s): %s %v = no limit; want %+v", i, row.test, row.domain, row.entries, *row.want)
		case row.want != nil && *got != *row.want:
			t.Errorf("row %d (%s): %s %v = %+v; want %+v", i, row.test, row.domain, row.entries, *got, *row.want)
		}
	}
	t.Logf("%d rows, %d deliberate differences", len(envoyRows), differences)
}

// TestEnvoyErrorsNamePositions checks that each refusal names the file, the
// line and (except YAML syntax errors, which yaml.v3 reports by line) the
// column.
func TestEnvoyErrorsNamePositions(t *testing.T) {
	cases := map[string]string{
		"duplicate_key.yaml":       "testdata/envoy/duplicate_key.yaml:6:5: ",
		"bad_limit_unit.yaml":      "testdata/envoy/bad_limit_unit.yaml:6:13: ",
		"misspelled_key2.yaml":     "testdata/envoy/misspelled_key2.yaml:7:7: ",
		"unlimited_with_unit.yaml": "testdata/envoy/unlimited_with_unit.yaml:6:13: ",
		"bad_yaml.yaml":            "testdata/envoy/bad_yaml.yaml:2: ",
	}
	for file, prefix := range cases {
		_, err := Load([]string{"testdata/envoy/" + file}, Options{})
		if err == nil || !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("Load(%s) = %v; want an error starting %q", file, err, prefix)
		}
	}
}
