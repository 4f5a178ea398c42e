package builtin

import (
	"path"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// samples are the inputs each built-in template is rendered with. A new
// template without samples fails TestBuiltinsRender, so every shipped
// template is exercised.
var samples = map[string]map[string]any{
	"gmail_tpl_verb_messages_get_metadata_v1":    {"message_id": "18c2f0a1b2c3d4e5"},
	"gmail_tpl_verb_messages_get_content_v1":     {"message_id": "18c2f0a1b2c3d4e5"},
	"gmail_tpl_verb_messages_list_by_label_v1":   {"label": "work"},
	"gmail_tpl_verb_messages_modify_labels_v1":   {"message_id": "18c2f0a1b2c3d4e5", "remove_label_ids": []any{"INBOX"}},
	"gmail_tpl_verb_drafts_send_v1":              {"draft_id": "r-123"},
	"gmail_tpl_plan_send_email_v1":               {"to": []any{"ana@example.com"}, "subject": "Hello", "text_plain": "Hi Ana"},
	"gmail_tpl_plan_send_email_with_document_v1": {"to": []any{"ana@example.com"}, "subject": "My passport", "text_plain": "Attached.", "document_attachments": []any{map[string]any{"type_id": "identity.passport"}}},
	"gmail_tpl_plan_reply_in_thread_v1":          {"to": []any{"ana@example.com"}, "thread_id": "18c2f0", "text_plain": "Thanks!"},
	"gmail_tpl_plan_create_draft_v1":             {"to": []any{"ana@example.com"}, "subject": "Draft", "text_plain": "For review"},
	"gmail_tpl_plan_trash_message_v1":            {"message_id": "18c2f0a1b2c3d4e5"},
	"gmail_tpl_plan_untrash_message_v1":          {"message_id": "18c2f0a1b2c3d4e5"},
	"http_tpl_verb_get_json_v1":                  {"url": "https://api.example.com/v1/items", "auth_target": "https://api.example.com"},
	"http_tpl_verb_post_json_v1":                 {"url": "https://hooks.example.com/in", "auth_target": "https://hooks.example.com", "body": map[string]any{"text": "hi"}},
}

func TestBuiltinsValidateAndRender(t *testing.T) {
	files, err := Files()
	require.NoError(t, err)
	require.NotEmpty(t, files)
	bundles, err := Bundles()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, b := range bundles {
		_, _, err := catalog.Prepare(b)
		require.NoError(t, err, b.CookbookID)
		assert.Contains(t, files, path.Join("cookbooks", b.CookbookID+".json"), "file must be named after the cookbook id")
		for i := range b.Entries {
			e := &b.Entries[i]
			assert.NotEmpty(t, e.Title, e.EntryID)
			assert.NotEmpty(t, e.Description, e.EntryID)
			assert.NotEmpty(t, e.Tags, e.EntryID)
			if !catalog.IsTemplate(e.EntryType) {
				continue
			}
			seen[e.EntryID] = true
			in, ok := samples[e.EntryID]
			require.True(t, ok, "template %s has no sample inputs in builtin_test.go", e.EntryID)
			res, err := catalog.RenderEntry(b, e, in, "")
			require.NoError(t, err, e.EntryID)
			assert.Empty(t, res.MissingInputs)
			// Every required binding is satisfiable and nothing is left as
			// a placeholder: rendered strings at bound paths are non-empty.
			for _, bd := range e.Bindings {
				if _, given := in[bd.InputKey]; given {
					continue
				}
				assert.True(t, bd.HasDefault() || !bd.IsRequired(), "%s: %s", e.EntryID, bd.InputKey)
			}
			// Missing every required input is reported, never rendered.
			if hasRequired(e) {
				_, err := catalog.RenderEntry(b, e, map[string]any{}, "")
				require.Error(t, err, e.EntryID)
				assert.Contains(t, err.Error(), "MCP_TEMPLATE_RENDER_UNRESOLVED")
			}
		}
	}
	for id := range samples {
		assert.True(t, seen[id], "sample for unknown template %s", id)
	}
}

func hasRequired(e *catalog.Entry) bool {
	for _, b := range e.Bindings {
		if b.IsRequired() && !b.HasDefault() {
			return true
		}
	}
	return false
}

func TestBuiltinCoverage(t *testing.T) {
	bundles, err := Bundles()
	require.NoError(t, err)
	verbs := map[string]bool{}
	var gmail, http *catalog.Bundle
	for _, b := range bundles {
		switch b.CookbookID {
		case "google.workspace":
			gmail = b
		case "http.recipes":
			http = b
		}
		for _, e := range b.Entries {
			verbs[e.Verb] = true
			if steps, ok := e.BasePlan["steps"].([]any); ok {
				for _, s := range steps {
					verbs[s.(map[string]any)["verb"].(string)] = true
				}
			}
		}
	}
	require.NotNil(t, gmail)
	require.NotNil(t, http)
	for _, v := range []string{"google.gmail.labels.list", "google.gmail.messages.list", "google.gmail.messages.get",
		"google.gmail.drafts.create", "google.gmail.drafts.send", "google.gmail.messages.trash", "google.gmail.messages.untrash"} {
		assert.True(t, verbs[v], v)
	}
	// The route registry (domain/routing) references these entries.
	for _, id := range []string{"gmail_tpl_plan_send_email_v1", "gmail_tpl_plan_reply_in_thread_v1", "gmail_tpl_plan_create_draft_v1",
		"gmail_tpl_verb_messages_get_metadata_v1", "gmail_tpl_verb_messages_get_content_v1", "gmail_tpl_verb_messages_list_by_label_v1",
		"gmail_tpl_verb_messages_modify_labels_v1", "gmail_recipe_labels_list_v1", "gmail_recipe_messages_list_inbox_v1",
		"gmail_recipe_plan_send_status_update_v1", "gmail_tpl_plan_trash_message_v1", "gmail_tpl_plan_untrash_message_v1"} {
		assert.NotNil(t, gmail.Entry(id), id)
	}
	// Document attachment send renders the attachment into the draft.
	e := gmail.Entry("gmail_tpl_plan_send_email_with_document_v1")
	res, err := catalog.RenderEntry(gmail, e, samples[e.EntryID], "")
	require.NoError(t, err)
	step0 := res.Rendered["steps"].([]any)[0].(map[string]any)["request_base"].(map[string]any)
	assert.Equal(t, []any{map[string]any{"type_id": "identity.passport"}}, step0["document_attachments"])
	// ... and refuses to render without one, or with a malformed one.
	in := map[string]any{"to": []any{"a@example.com"}, "subject": "s", "text_plain": "t", "document_attachments": []any{map[string]any{"name": "x"}}}
	_, err = catalog.RenderEntry(gmail, e, in, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MCP_TEMPLATE_INPUT_INVALID")

	// Every generic.http template carries a secret attachment whose target
	// is bound, so credentials always come from the vault.
	for _, e := range http.Entries {
		req := e.BaseRequest["request"].(map[string]any)
		atts := req["secret_attachments"].([]any)
		require.Len(t, atts, 1, e.EntryID)
		bound := false
		for _, bd := range e.Bindings {
			bound = bound || strings.HasPrefix(bd.TargetPath, "/request/secret_attachments/0/target")
		}
		assert.True(t, bound, e.EntryID)
		res, err := catalog.RenderEntry(http, &e, samples[e.EntryID], "")
		require.NoError(t, err)
		rendered := res.Rendered["request"].(map[string]any)["secret_attachments"].([]any)[0].(map[string]any)
		assert.Equal(t, samples[e.EntryID]["auth_target"], rendered["target"])
		assert.Equal(t, "api_token", rendered["slot"])
	}
}

// The fingerprint is the embedded files': stable, and a hash (the seeder
// stores it).
func TestFingerprint(t *testing.T) {
	a, err := Fingerprint()
	require.NoError(t, err)
	b, err := Fingerprint()
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.Len(t, a, 64)
}
