package routing

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRouteValidationMessages pins every route check's exact message and
// which check wins when a route breaks several.
func TestRouteValidationMessages(t *testing.T) {
	reg := func(route string) string {
		return `{"type":"vaultclaw.routing.registry.v1","version":"1","inputs":{"to":{"type":"string_array"},"body":{"type":"string"}},"routes":[` + route + `]}`
	}
	for _, c := range []struct{ route, want string }{
		{`{"route_id":" ","domain":"d","strategy":"RECIPE"}`, `registry: routes[0] (): route_id is required and must be a safe identifier`},
		{`{"route_id":"bad id!","domain":""}`, `registry: routes[0] (bad id!): route_id is required and must be a safe identifier`},
		{`{"route_id":"r","domain":"  ","strategy":"nope"}`, `registry: routes[0] (r): domain is required`},
		{`{"route_id":"r","domain":"d","strategy":" template ","cookbook_id":"c","entry_id":"e"}`, `registry: routes[0] (r): TEMPLATE needs cookbook_id, entry_id and entry_type`},
		{`{"route_id":"r","domain":"d","strategy":"RECIPE","entry_id":"e","entry_type":"x","keywords":[]}`, `registry: routes[0] (r): RECIPE needs cookbook_id, entry_id and entry_type`},
		{`{"route_id":"r","domain":"d","strategy":"CONNECTOR_EXECUTE_JOB","connector_id":"google"}`, `registry: routes[0] (r): CONNECTOR_EXECUTE_JOB needs connector_id and verb`},
		{`{"route_id":"r","domain":"d","strategy":"plan_execute"}`, `registry: routes[0] (r): PLAN_EXECUTE needs cookbook_id or entry_id`},
		{`{"route_id":"r","domain":"d","strategy":"","keywords":[]}`, `registry: routes[0] (r): unknown strategy ""`},
		{`{"route_id":"r","domain":"d","strategy":"PLAN_EXECUTE","entry_id":"e","keywords":["", " "]}`, `registry: routes[0] (r): keywords must be non-empty`},
		{`{"route_id":"r","domain":"d","strategy":"PLAN_EXECUTE","entry_id":"e","keywords":["a"],"required_inputs":["to"],"optional_inputs":["nope","To"]}`, `registry: routes[0] (r): unknown input key "nope" (declare it under inputs)`},
		{`{"route_id":"r","domain":"d","strategy":"PLAN_EXECUTE","entry_id":"e","keywords":["a"],"required_inputs":["to"],"optional_inputs":[" TO "]}`, `registry: routes[0] (r): input "to" is both required and optional`},
		{`{"route_id":"r","domain":"d","strategy":"PLAN_EXECUTE","entry_id":"e","keywords":["a"],"required_inputs":["to"],
			"enrichment_policies":[{"input_key":"zz","resolution_mode":"bogus"}]}`, `registry: routes[0] (r): enrichment_policies[0]: unknown input key "zz"`},
		{`{"route_id":"r","domain":"d","strategy":"PLAN_EXECUTE","entry_id":"e","keywords":["a"],"required_inputs":["to"],
			"enrichment_policies":[{"input_key":" Body ","resolution_mode":"bogus"}]}`, `registry: routes[0] (r): enrichment_policies[0]: input "body" is not an input of this route`},
		{`{"route_id":"r","domain":"d","strategy":"PLAN_EXECUTE","entry_id":"e","keywords":["a"],"required_inputs":["to"],
			"enrichment_policies":[{"input_key":"to","resolution_mode":"bogus","condition":"sunny"}]}`, `registry: routes[0] (r): enrichment_policies[0]: unknown resolution_mode "BOGUS"`},
		{`{"route_id":"r","domain":"d","strategy":"PLAN_EXECUTE","entry_id":"e","keywords":["a"],"required_inputs":["to"],
			"enrichment_policies":[{"input_key":"to","resolution_mode":"auto_retry_with_facts","fact_key":"k","condition":"sunny"}]}`, `registry: routes[0] (r): enrichment_policies[0]: AUTO_RETRY_WITH_FACTS needs fact_key and fact_kind`},
		{`{"route_id":"r","domain":"d","strategy":"PLAN_EXECUTE","entry_id":"e","keywords":["a"],"required_inputs":["to"],
			"enrichment_policies":[{"input_key":"to","resolution_mode":"ASK_USER","condition":" Sunny "}]}`, `registry: routes[0] (r): enrichment_policies[0]: unknown condition "sunny"`},
		{`{"route_id":"r","domain":"d","strategy":"PLAN_EXECUTE","entry_id":"e","keywords":["a"],"required_inputs":["to"],"optional_inputs":["body"],
			"enrichment_policies":[{"input_key":"to","resolution_mode":"ASK_USER"},{"input_key":"body","resolution_mode":"ASK_USER","condition":"weather_requested"},
			{"input_key":"TO","resolution_mode":"ask_user","condition":""}]}`, `registry: routes[0] (r): enrichment_policies[2]: duplicate policy for (to, "")`},
	} {
		_, err := Load([]byte(reg(c.route)))
		require.Error(t, err, c.route)
		assert.Equal(t, c.want, err.Error(), c.route)
	}
}

// TestRouteNormalization pins what validation leaves in a route: trimmed
// and case-folded fields, sorted de-duplicated lists, phrase keywords and
// id words.
func TestRouteNormalization(t *testing.T) {
	r, err := Load([]byte(`{"type":"vaultclaw.routing.registry.v1","version":"1",
		"inputs":{"to":{"type":"string_array"},"body":{"type":"string"}},
		"routes":[{"route_id":" Mail.Send_V1 ","domain":" Mail ","strategy":" recipe ","cookbook_id":" c ","version":" 1.0 ",
			"entry_id":" send_entry ","entry_type":" Recipe.Verb.V1 ","connector_id":" google ","verb":" g.send ",
			"keywords":["Send Mail","send","SEND "," "],"tags":["B","a","b"],"required_inputs":[" TO "],"optional_inputs":["body","Body"],
			"enrichment_policies":[{"input_key":" Body ","resolution_mode":" auto_retry_with_facts ","fact_key":" k ","fact_kind":" kind ",
				"batch_group":" g ","condition":" Weather_Requested "}]}]}`))
	require.NoError(t, err)
	rt := r.Routes[0]
	assert.Equal(t, "Mail.Send_V1", rt.RouteID)
	assert.Equal(t, "mail", rt.Domain)
	assert.Equal(t, "RECIPE", rt.Strategy)
	assert.Equal(t, []string{"c", "1.0", "send_entry", "recipe.verb.v1", "google", "g.send"},
		[]string{rt.CookbookID, rt.Version, rt.EntryID, rt.EntryType, rt.ConnectorID, rt.Verb})
	assert.Equal(t, []string{"send", "send mail"}, rt.Keywords)
	assert.Equal(t, map[string]bool{"send mail": true}, rt.keywordPhrases)
	assert.Equal(t, []string{"a", "b"}, rt.Tags)
	assert.Equal(t, []string{"to"}, rt.RequiredInputs)
	assert.Equal(t, []string{"body"}, rt.OptionalInputs)
	assert.Equal(t, Policy{InputKey: "body", ResolutionMode: ModeAutoRetry, FactKey: "k", FactKind: "kind", BatchGroup: "g", Condition: condWeather},
		rt.EnrichmentPolicies[0])
	assert.Equal(t, splitWords("Mail.Send_V1 send_entry"), rt.idWords)
	got, ok := r.byID["Mail.Send_V1"]
	require.True(t, ok)
	assert.Same(t, &r.Routes[0], got)
}
