pytest_plugins = ["searxng_fixture"]
