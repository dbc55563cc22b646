package server

// Answer returns the status, code and retryability toAPIError gives err.
func Answer(err error) (status int, code string, retryable bool) {
	e := toAPIError(err)
	return e.status, e.code, e.retryable
}
