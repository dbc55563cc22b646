package server

// Routes lists every route s serves as "METHOD PATTERN" (the metrics
// route included), for the tests that must cover each of them.
func Routes(s *Server) []string {
	var out []string
	for _, rt := range s.table() {
		out = append(out, rt.method+" "+rt.path)
	}
	return append(out, "GET "+metricsPath)
}
