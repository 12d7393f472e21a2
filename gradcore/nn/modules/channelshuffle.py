"""``torch.nn.modules.channelshuffle``: the channel shuffle. The names programs import from
here, bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from . import (  # noqa: F401  (re-exported)
    ChannelShuffle,
)

__all__ = ["ChannelShuffle"]
