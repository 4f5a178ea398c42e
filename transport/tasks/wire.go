package tasks

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ExtensionID names the extension in capabilities.
const ExtensionID = "io.modelcontextprotocol/tasks"

// Methods and the notification of the extension.
const (
	MethodGet          = "tasks/get"
	MethodUpdate       = "tasks/update"
	MethodCancel       = "tasks/cancel"
	NotificationStatus = "notifications/tasks"
)

// Result types: "task" marks a CreateTaskResult; every tasks/* answer is
// "complete".
const (
	resultTypeTask     = "task"
	resultTypeComplete = "complete"
)

// Wire is a task as the extension's messages carry it: the Task shape, with
// the payload its status carries (result when completed, error when
// failed).
type Wire struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTLMS is always sent (null would mean unlimited; a task here always
	// has an end).
	TTLMS          *int64          `json:"ttlMs"`
	PollIntervalMS int64           `json:"pollIntervalMs,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          json.RawMessage `json:"error,omitempty"`
}

// CreateResult answers a tools/call with a task (resultType "task").
type CreateResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	Wire
}

// GetParams are the parameters of tasks/get and tasks/cancel.
type GetParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

// UpdateParams are the parameters of tasks/update.
type UpdateParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// GetResult answers tasks/get: the task in its current status.
type GetResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	Wire
}

// AckResult is the empty acknowledgement of tasks/update and tasks/cancel.
type AckResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// errTaskNotFound answers an unknown, expired or foreign task id alike.
func errTaskNotFound(method string) error {
	verb := "retrieve"
	switch method {
	case MethodCancel:
		verb = "cancel"
	case MethodUpdate:
		verb = "update"
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Failed to %s task: Task not found", verb)}
}

// errMissingCapability answers a tasks/* request from a client that did not
// declare the extension (-32021 with the capability it lacks).
func errMissingCapability() error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{ExtensionID: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "Missing required client capability", Data: data}
}

// errHeaderMismatch answers a Streamable HTTP tasks/* request whose Mcp-Name
// header names another task than its params.
func errHeaderMismatch(header string) error {
	return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
		Message: fmt.Sprintf("header mismatch: Mcp-Name header value %q does not match params.taskId", header)}
}
