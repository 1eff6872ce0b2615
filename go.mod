module github.com/ferrystream/ferry

go 1.26

require github.com/apache/arrow-go/v18 v18.8.0 // indirect
