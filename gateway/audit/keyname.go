package audit

// KeyName is the signer name of the log's checkpoints (the key `audit key`
// prints is "<name>+<hash>+<public key>").
func (l *Log) KeyName() string { return l.key.Verifier().Name() }
