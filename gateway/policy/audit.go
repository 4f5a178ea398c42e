package policy

// Audit is the policy file's [audit] section. Receipts always carry keyed
// digests of a call's arguments and result; these add the data itself,
// redacted by rule (audit.Redact), for operators who must see who called
// what with which parameters. Both are off by default.
type Audit struct {
	// LogParams: tool-call receipts carry the call's arguments and
	// external-event receipts their body.
	LogParams bool `toml:"log_params" json:"log_params"`
	// LogResults: tool-call receipts carry the result's data (or error).
	LogResults bool `toml:"log_results" json:"log_results"`
}
