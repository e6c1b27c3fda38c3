"""The answer: the verdict rules, their explanations, remedies and break-evens."""
