package queue

// Client is what the publisher and Visibility call (*sqs.Client is one).
type Client interface {
	API
	VisibilityAPI
}
