package tools

// NextStepOf lets external tests compute the step a message ends with.
var NextStepOf = nextStepOf

// PredecessorBundle lets external tests read the predecessor's Gmail
// cookbooks from the shared fixtures.
var PredecessorBundle = predecessorBundle
