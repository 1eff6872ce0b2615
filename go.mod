module github.com/ferrystream/ferry

go 1.26
