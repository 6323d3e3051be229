"""Screens of watched panes and answering a blocked one, across replicas.

`ScreenHub` (the screens pages watch; `screen_json`), `AnswerDesk` (answering from the
board; `audit`, its record of every refusal), `Offers` (what a blocked pane's push
offers; `card_offer`, what its card offers) and, on PostgreSQL, `Replicas` (the same across processes).
"""

from .desk import AnswerDesk, audit
from .offer import Offers
from .offer import card as card_offer
from .replicas import Replicas
from .screens import ScreenHub, screen_json

__all__ = ["AnswerDesk", "Offers", "Replicas", "ScreenHub", "audit", "card_offer", "screen_json"]
