package tools

// NextStepOf lets external tests compute the step a message ends with.
var NextStepOf = nextStepOf
