package app

// Origin is the audit log's origin line (vaultclaw_whoami).
func (r *auditRef) Origin() string { return r.p.Load().Origin() }

// KeyName is the name of the key that signs the log's checkpoints.
func (r *auditRef) KeyName() string { return r.p.Load().KeyName() }
