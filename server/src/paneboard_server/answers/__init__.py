"""Screens of watched panes and answering a blocked one, across replicas."""
